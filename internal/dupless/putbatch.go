package dupless

import (
	"github.com/veil-project/veil/internal/mle"
)

// putBatch is one batch of a file's chunks (up to batchBytes of them) on its way through
// the steps of storing, one method each: reuse (what is stored already), claim (which keys
// this file derives for the run), derive (one key server request), encrypt (on all cores),
// send (in order, into the record). The file's commit (filePut.commit) follows its last batch.
type putBatch struct {
	f      *filePut
	pieces []piece

	known   map[mle.Digest]chunkRef   // reusable at reuse; its key serves if its upload fails meanwhile
	need    []mle.Digest              // distinct digests that need a key
	futures map[mle.Digest]*keyFuture // keys of need, derived by this file or another of the run
	claimed []mle.Digest              // the digests of need this file derives (and stores), in order
	owned   map[mle.Digest]bool       // claimed, as a set
	keyOf   map[mle.Digest]mle.Key    // derived keys
	derived chan struct{}             // closed when the key server answered for claimed
	keys    []mle.Key                 // by claimed, once derived
	kerr    error                     // why claimed has no keys
	enc     []encrypted               // by piece, after encrypt
	refs    []chunkRef                // by piece, after send
}

// encrypted is one chunk of a batch after the parallel encryption step.
type encrypted struct {
	ref   chunkRef
	ct    []byte
	err   error
	fresh bool // encrypted here (false: reused, decided again in order)
}

func (fp *filePut) newBatch(pieces []piece) *putBatch { return &putBatch{f: fp, pieces: pieces} }

// store runs the batch's steps one after the other (begin, then finish).
func (b *putBatch) store() error {
	b.begin(false)
	return b.finish()
}

// begin sorts the batch's chunks, claims the keys it needs and starts deriving them: in
// the background when async, so that the key server's round trip overlaps the previous
// batch's encryption and upload.
func (b *putBatch) begin(async bool) {
	b.reuse()
	b.claim()
	b.startDerive(async)
}

// startDerive asks the key server for the keys this file claimed and completes their
// futures for the run (derive waits for it).
func (b *putBatch) startDerive(async bool) {
	b.derived = make(chan struct{})
	run := func() {
		defer close(b.derived)
		b.keys, b.kerr = b.f.c.ks.derive(b.f.ctx, b.claimed)
		b.f.run.resolve(b.claimed, b.futures, b.keys, b.kerr)
	}
	if async {
		go run()
	} else {
		run()
	}
}

// finish waits for the batch's keys, encrypts and sends its chunks, and appends them to
// the file's record.
func (b *putBatch) finish() error {
	c := b.f.c
	stop := c.timer("keys")
	if err := b.derive(); err != nil {
		return err
	}
	stop()
	stop = c.timer("encrypt")
	b.encrypt()
	stop()
	if err := b.send(); err != nil {
		return err
	}
	for i, p := range b.pieces {
		b.f.rec.Chunks = append(b.f.rec.Chunks, b.refs[i])
		b.f.rec.Size += uint64(p.plainLen)
	}
	return nil
}

// reuse sorts the pieces into those already stored (known) and the distinct digests that
// need a key (need), for one key request per batch.
func (b *putBatch) reuse() {
	asked := map[mle.Digest]bool{}
	b.known = map[mle.Digest]chunkRef{}
	b.need = nil
	for _, p := range b.pieces {
		if r, ok := b.f.reusable(p); ok {
			b.known[p.digest] = r.ref
		} else if !asked[p.digest] {
			asked[p.digest] = true
			b.need = append(b.need, p.digest)
		}
	}
}

// claim takes from the run the futures of the needed keys: this file derives (and later
// stores) the digests no other file of the run is deriving, so each is asked for once.
func (b *putBatch) claim() {
	b.claimed, b.futures = b.f.run.claim(b.need)
	b.owned = make(map[mle.Digest]bool, len(b.claimed))
	for _, d := range b.claimed {
		b.owned[d] = true
		b.f.owned = append(b.f.owned, b.futures[d])
	}
}

// derive gets the keys this file claimed (asking the key server now unless begin did)
// and waits for the keys other files of the run are deriving. A failed derivation leaves
// the chunks to random keys (the file's fallback); a cancelled context fails it.
func (b *putBatch) derive() error {
	ctx := b.f.ctx
	if b.derived == nil {
		b.startDerive(false)
	}
	select {
	case <-b.derived:
	case <-ctx.Done():
		return ctx.Err()
	}
	kerr := b.kerr
	b.keyOf = make(map[mle.Digest]mle.Key, len(b.need))
	for d, f := range b.futures { // including keys other files of the run are deriving
		select {
		case <-f.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if f.err != nil {
			kerr = f.err
		} else {
			b.keyOf[d] = f.key
		}
	}
	if kerr != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.f.fallback = kerr
	}
	return nil
}

// deferred reports whether another file of the run owns p's chunk, having derived its key:
// it encrypts and stores it, and this file reuses it after its own chunks are sent (never
// before: two files waiting on each other's chunks would deadlock).
func (b *putBatch) deferred(p piece) bool {
	f, ok := b.futures[p.digest]
	return ok && !b.owned[p.digest] && f.err == nil
}

// encrypt encrypts the batch's new chunks on all cores. Reusable chunks keep their
// reference, in case their upload fails and is forgotten before send.
func (b *putBatch) encrypt() {
	b.enc = make([]encrypted, len(b.pieces))
	parallel(len(b.pieces), func(i int) {
		if p := b.pieces[i]; !b.deferred(p) {
			if r, ok := b.f.reusable(p); ok {
				b.enc[i].ref = r.ref
			} else {
				b.enc[i] = b.encryptNew(b.take(i))
			}
		}
	})
}

// encryptNew encrypts p under its derived key, else the key it had when it was reusable
// (its upload failed since), else a random key (the fallback).
func (b *putBatch) encryptNew(p piece) encrypted {
	ref := chunkRef{PlainLen: uint32(p.plainLen), MsgLen: uint32(len(p.msg)), Flags: p.flags, Digest: p.digest}
	if k, ok := b.keyOf[p.digest]; ok {
		ref.Key = k
	} else if r, ok := b.known[p.digest]; ok && r.Flags&flagRandomKey == 0 {
		ref.Key = r.Key
	} else {
		ref.Key, ref.Flags = randomKey(), ref.Flags|flagRandomKey
	}
	return b.f.c.encryptChunk(p, ref)
}

// encryptChunk encrypts p's message under ref.Key, recording the suite and scheme used
// and the tag (H(K) for HCE2: no pass over the data). A piece with room is encrypted in
// place (its message is overwritten): each piece is encrypted at most once (take).
func (c *Client) encryptChunk(p piece, ref chunkRef) encrypted {
	m := c.mleFor(len(p.msg))
	ref.Suite, ref.Scheme = m.Suite, m.Scheme
	dst := p.room[:0]
	if len(p.room) != mle.HeaderSize+len(p.msg) {
		dst = make([]byte, 0, len(p.msg)+m.Scheme.Overhead())
	}
	ct, err := m.AppendEnc(dst, ref.Key, p.msg)
	if err == nil {
		ref.Tag, err = mle.TagGen(ct)
	}
	return encrypted{ref, ct, err, true}
}

// take returns piece i for its one encryption: with its room, which the batch gives up.
func (b *putBatch) take(i int) piece {
	p := b.pieces[i]
	b.pieces[i].room = nil
	return p
}

// send decides each chunk in order, reusing or sending it, then takes the chunks other
// files of the run own once those have stored them (or stores them itself if they gave up).
func (b *putBatch) send() error {
	b.refs = make([]chunkRef, len(b.pieces))
	var later []int
	for i, p := range b.pieces {
		if b.deferred(p) {
			later = append(later, i)
			continue
		}
		if err := b.sendOne(i); err != nil {
			return err
		}
	}
	for _, i := range later {
		if err := b.sendLater(i); err != nil {
			return err
		}
	}
	return nil
}

// sendOne places piece i: reused if it still can be, one copy of a repeat within this
// file, else sent.
func (b *putBatch) sendOne(i int) error {
	p, e := b.pieces[i], b.enc[i]
	switch {
	case !e.fresh:
		if r, ok := b.f.reusable(p); ok {
			b.use(i, r)
			return nil
		}
		// Its upload failed and was forgotten: store it again, same key.
		if e = b.f.c.encryptChunk(b.take(i), e.ref); e.err != nil {
			return e.err
		}
	case e.err != nil:
		return e.err
	}
	// A repeat of a fallback chunk of this file, or a repeat within this batch: one copy.
	if m, ok := b.f.mine[p.digest]; ok && (e.ref.Flags&flagRandomKey != 0 || m.ref.Tag == e.ref.Tag) {
		b.use(i, m)
		return nil
	}
	b.put(i, e)
	return nil
}

// sendLater places piece i, whose chunk another file of the run owns, once it is stored.
func (b *putBatch) sendLater(i int) error {
	p := b.pieces[i]
	select {
	case <-b.futures[p.digest].stored:
	case <-b.f.ctx.Done():
		return b.f.ctx.Err()
	}
	if r, ok := b.f.reusable(p); ok {
		b.use(i, r)
		return nil
	}
	e := b.encryptNew(b.take(i)) // the owner gave up: store it ourselves
	if e.err != nil {
		return e.err
	}
	b.put(i, e)
	return nil
}

// use makes piece i a reference to a chunk stored (or being stored) already.
func (b *putBatch) use(i int, r pending) {
	b.refs[i] = r.ref
	if r.up != nil {
		b.f.waits = append(b.f.waits, r.up)
	}
	b.f.kept++
}

// put sends piece i's chunk through the run (once per run).
func (b *putBatch) put(i int, e encrypted) {
	u, fresh := b.f.run.store(b.f.ctx, e.ref, e.ct)
	if fresh {
		b.f.sent++
	} else {
		b.f.kept++ // another file of the run is sending the same chunk
	}
	b.f.mine[b.pieces[i].digest] = pending{e.ref, u}
	b.refs[i] = e.ref
	b.f.waits = append(b.f.waits, u)
}
