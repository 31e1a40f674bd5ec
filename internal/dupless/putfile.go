package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// batchBytes bounds the chunk data a file keeps in memory while its keys are derived.
const batchBytes = 8 << 20

// putFile chunks, compresses, derives keys for, encrypts and uploads one file, then writes
// its key record: the record is the commit point, so a crash never leaves a record that
// points to missing content, and overwriting a file is atomic.
func (c *Client) putFile(ctx context.Context, t putTask, sum *Summary, run *putRun) error {
	encDir, encName, err := c.encFile(t.dest)
	if err != nil {
		return err
	}
	if err := run.notADir(ctx, c.be, encDir, encName, t.dest); err != nil {
		return err
	}
	release, err := c.transfer(ctx, t.info.Size())
	if err != nil {
		return err
	}
	defer release()
	// Open without following links or blocking on FIFOs, and insist it is still the regular
	// file the walk saw: a path swapped for a symlink meanwhile is not read.
	f, err := os.OpenFile(t.local, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || !os.SameFile(fi, t.info) {
		return errors.New("replaced while being stored: not stored")
	}
	// Chunks this file's previous version already stored are reused whole (no key request,
	// no encryption, no upload), as are chunks stored earlier in this run or in this file.
	prev := map[mle.Digest]chunkRef{}
	if exists, err := run.dirs.has(ctx, c.be, encDir, encName+keySuffix); err != nil {
		return err
	} else if exists {
		if old, err := c.readRecord(ctx, encDir, encName+keySuffix); err == nil {
			if c.unchanged(old, fi) {
				n := len(old.Chunks)
				sum.add(func(s *Summary) {
					s.Files++
					s.Unchanged++
					s.Bytes += int64(old.Size)
					s.Chunks += n
					s.ChunksKept += n
				})
				c.bytesDone(fi.Size())
				return nil
			}
			for _, ch := range old.Chunks {
				// Retry the KS for fallbacks; a version 1 reference does not name its
				// chunk's suite and scheme, so it is encrypted anew (the service dedups it).
				if (ch.Flags&flagRandomKey == 0 || c.ks.kd == nil) && ch.Scheme != 0 {
					prev[ch.Digest] = ch
				}
			}
		} else if !errors.Is(err, storage.ErrNotFound) {
			c.log.Warn("previous key record unreadable; storing anew", "path", t.dest, "err", err)
		}
	}
	mine := map[mle.Digest]pending{} // chunks of this file so far, fallbacks included
	reuse := func(p piece) (pending, bool) {
		if old, ok := prev[p.digest]; ok && old.Flags&flagCompressed == p.flags&flagCompressed {
			return pending{old, nil}, true
		}
		if m, ok := mine[p.digest]; ok && m.ref.Flags&flagCompressed == p.flags&flagCompressed {
			return m, true
		}
		return run.lookup(p)
	}
	rec := &record{Type: typeFile, Mode: unixMode(fi.Mode()), MTime: fi.ModTime().UnixNano()}
	var waits []*upload // uploads this file's record must not precede
	kept := 0           // chunks reused rather than sent by this file (counted if it commits)
	var ownedFutures []*keyFuture
	defer func() { // chunks this file owned but did not store: let the waiting files go on
		for _, f := range ownedFutures {
			f.markStored()
		}
	}()
	defer func() { // on every path: no upload of this file outlives it
		for _, u := range waits {
			u.wait()
		}
	}()
	var fallback error
	sp := newSplitter(f)
	defer sp.close()
	for done := false; !done; {
		var raw [][]byte
		size := 0
		stop := c.timer("chunk")
		for size < batchBytes {
			data, err := sp.next()
			if err == io.EOF {
				done = true
				break
			}
			if err != nil {
				return fmt.Errorf("read: %w", err)
			}
			raw = append(raw, data)
			size += len(data)
			c.bytesDone(int64(len(data)))
		}
		batch := prepareAll(c.mleFor, raw, !c.opts.NoCompress)
		stop()
		if len(rec.Chunks)+len(batch) > maxRecordChunks {
			return fmt.Errorf("file too large: more than %d chunks", maxRecordChunks)
		}
		// One key request for the distinct new digests of the batch.
		var need []mle.Digest
		asked := map[mle.Digest]bool{}
		known := map[mle.Digest]chunkRef{} // reusable now; its key if its upload fails meanwhile
		for _, p := range batch {
			if r, ok := reuse(p); ok {
				known[p.digest] = r.ref
			} else if !asked[p.digest] {
				asked[p.digest] = true
				need = append(need, p.digest)
			}
		}
		stop = c.timer("keys")
		mineDs, futures := run.claim(need)
		owned := make(map[mle.Digest]bool, len(mineDs))
		for _, d := range mineDs {
			owned[d] = true
			ownedFutures = append(ownedFutures, futures[d])
		}
		keys, kerr := c.ks.derive(ctx, mineDs)
		run.resolve(mineDs, futures, keys, kerr)
		keyOf := make(map[mle.Digest]mle.Key, len(need))
		for d, f := range futures { // including keys other files of the run are deriving
			select {
			case <-f.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if f.err != nil {
				kerr = f.err
			} else {
				keyOf[d] = f.key
			}
		}
		stop()
		if kerr != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fallback = kerr
		}
		// Another file of the run owns a chunk when it derived its key: it encrypts and
		// stores it, and this file reuses it after its own chunks are sent (never before:
		// two files waiting on each other's chunks would deadlock).
		deferred := func(p piece) bool {
			f, ok := futures[p.digest]
			return ok && !owned[p.digest] && f.err == nil
		}
		encryptRef := func(p piece, ref chunkRef) encrypted {
			m := c.mleFor(len(p.msg))
			ref.Suite, ref.Scheme = m.Suite, m.Scheme
			ct, err := m.AppendEnc(make([]byte, 0, len(p.msg)+m.Scheme.Overhead()), ref.Key, p.msg)
			if err == nil {
				ref.Tag, err = mle.TagGen(ct) // H(K) for HCE2: no pass over the data
			}
			return encrypted{ref, ct, err, true}
		}
		encrypt := func(p piece) encrypted {
			ref := chunkRef{PlainLen: uint32(p.plainLen), MsgLen: uint32(len(p.msg)), Flags: p.flags, Digest: p.digest}
			if k, ok := keyOf[p.digest]; ok {
				ref.Key = k
			} else if r, ok := known[p.digest]; ok && r.Flags&flagRandomKey == 0 {
				ref.Key = r.Key // was reusable when keys were asked for; its upload failed since
			} else {
				ref.Key, ref.Flags = randomKey(), ref.Flags|flagRandomKey
			}
			return encryptRef(p, ref)
		}
		// Encrypt this file's new chunks on all cores, then record and send them in order.
		stop = c.timer("encrypt")
		enc := make([]encrypted, len(batch))
		parallel(len(batch), func(i int) {
			if p := batch[i]; !deferred(p) {
				if r, ok := reuse(p); ok {
					enc[i].ref = r.ref // kept in case its upload fails and is forgotten
				} else {
					enc[i] = encrypt(p)
				}
			}
		})
		stop()
		refs := make([]chunkRef, len(batch))
		use := func(i int, r pending) {
			refs[i] = r.ref
			if r.up != nil {
				waits = append(waits, r.up)
			}
			kept++
		}
		send := func(i int, e encrypted) {
			u, fresh := run.store(ctx, e.ref, e.ct)
			if !fresh {
				kept++ // another file of the run is sending the same chunk
			}
			mine[batch[i].digest] = pending{e.ref, u}
			refs[i] = e.ref
			waits = append(waits, u)
		}
		var later []int
		for i, p := range batch {
			e := enc[i]
			switch {
			case deferred(p):
				later = append(later, i)
				continue
			case !e.fresh:
				if r, ok := reuse(p); ok {
					use(i, r)
					continue
				}
				// Its upload failed and was forgotten: store it again, same key.
				if e = encryptRef(p, e.ref); e.err != nil {
					return e.err
				}
			case e.err != nil:
				return e.err
			}
			if m, ok := mine[p.digest]; ok && e.ref.Flags&flagRandomKey != 0 {
				use(i, m) // a repeat of a fallback chunk of this file: one copy
				continue
			}
			if m, ok := mine[p.digest]; ok && m.ref.Tag == e.ref.Tag {
				use(i, m) // a repeat within this batch
				continue
			}
			send(i, e)
		}
		for _, i := range later { // chunks other files own: reuse theirs once stored
			p := batch[i]
			select {
			case <-futures[p.digest].stored:
			case <-ctx.Done():
				return ctx.Err()
			}
			if r, ok := reuse(p); ok {
				use(i, r)
				continue
			}
			e := encrypt(p) // the owner gave up: store it ourselves
			if e.err != nil {
				return e.err
			}
			send(i, e)
		}
		for i, p := range batch {
			rec.Chunks = append(rec.Chunks, refs[i])
			rec.Size += uint64(p.plainLen)
		}
	}
	// Hand the rest to the run: wait for this file's uploads, then write its record (the
	// commit point). The worker goes on with the next file meanwhile.
	pendingUploads := waits
	waits = nil // the commit waits for them, not the deferred cleanup
	run.commit(func() {
		err := c.commitFile(ctx, run, encDir, encName, rec, pendingUploads, fallback, kept, sum)
		c.done(sum, t.local, err)
	})
	return errCommitting
}

// unchanged reports whether the stored record old already describes the local file fi:
// same size, modification time and mode, as rclone decides without reading the file
// (restic also compares ctime and inode; Options.Force reads every file). A file stored under random keys while the key
// server was away is stored again, so that it gets deduplicated.
func (c *Client) unchanged(old *record, fi os.FileInfo) bool {
	if c.opts.Force || old.Type != typeFile || old.Size != uint64(fi.Size()) ||
		old.MTime != fi.ModTime().UnixNano() || old.Mode != unixMode(fi.Mode()) {
		return false
	}
	for _, ch := range old.Chunks {
		if ch.Flags&flagRandomKey != 0 && c.ks.kd != nil {
			return false
		}
	}
	return true
}

// commitFile waits for a file's chunk uploads, then writes its key record.
func (c *Client) commitFile(ctx context.Context, run *putRun, encDir, encName string, rec *record, uploads []*upload, fallback error, kept int, sum *Summary) error {
	stop := c.timer("upload")
	for _, u := range uploads {
		if err := run.await(ctx, u); err != nil {
			return err
		}
	}
	stop()
	if fallback == nil {
		rec.KeyID = c.ks.keyID()
	}
	stop = c.timer("record")
	var n int64
	err := retry(ctx, func() (err error) {
		n, err = c.writeRecord(ctx, encDir, encName+keySuffix, rec)
		return err
	})
	if err != nil {
		return err
	}
	stop()
	sum.add(func(s *Summary) {
		s.Files++
		s.Bytes += int64(rec.Size)
		s.Chunks += len(rec.Chunks)
		s.ChunksKept += kept
		s.BytesUploaded += n
		if fallback != nil {
			s.Fallback[reason(fallback)]++
		}
	})
	return nil
}

// encrypted is one chunk of a batch after the parallel encryption step.
type encrypted struct {
	ref   chunkRef
	ct    []byte
	err   error
	fresh bool // encrypted here (false: reused, decided again in order)
}

// reason shortens a key derivation error for the summary.
func reason(err error) string {
	s := err.Error()
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
