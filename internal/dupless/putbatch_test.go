package dupless

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// Unit tests of the steps of storing a file (putBatch and filePut), one by one, on a real
// local backend; the whole path is tested through Put elsewhere.

// newFilePut is a file being stored to "f" in a fresh run of c, without a local file.
func newFilePut(t *testing.T, c *Client, run *putRun) *filePut {
	t.Helper()
	if run == nil {
		run = newPutRun(c.be, &Summary{Fallback: map[string]int{}})
		t.Cleanup(run.wait)
	}
	encDir, encName, err := c.encFile("f")
	if err != nil {
		t.Fatal(err)
	}
	return &filePut{c: c, ctx: ctx, run: run, sum: run.sum, t: putTask{local: "f", dest: "f"},
		encDir: encDir, encName: encName, release: func() {},
		prev: map[mle.Digest]chunkRef{}, mine: map[mle.Digest]pending{}, rec: &record{Type: typeFile}}
}

// piecesOf prepares chunks (uncompressible random bytes of the given seeds) as a batch would.
func piecesOf(c *Client, seeds ...uint64) []piece {
	raw := make([][]byte, len(seeds))
	for i, s := range seeds {
		raw[i] = randBytes(4096, s)
	}
	return prepareAll(c.mleFor, raw, true)
}

// reuse finds chunks of the previous version, of this file and of the run, and asks for
// each new digest once.
func TestBatchReuse(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	fp := newFilePut(t, c, nil)
	ps := piecesOf(c, 1, 2, 3, 4, 4, 5)
	fp.prev[ps[0].digest] = chunkRef{Digest: ps[0].digest, Tag: mle.Tag{1}}
	fp.prev[ps[4].digest] = chunkRef{Digest: ps[4].digest, Flags: flagCompressed} // other compression: not reusable
	fp.mine[ps[1].digest] = pending{ref: chunkRef{Digest: ps[1].digest, Tag: mle.Tag{2}}}
	other := newFilePut(t, c, fp.run) // another file of the run stored piece 3
	ob := other.newBatch(piecesOf(c, 3))
	if err := ob.store(); err != nil {
		t.Fatal(err)
	}
	b := fp.newBatch(ps)
	b.reuse()
	if len(b.known) != 3 || b.known[ps[0].digest].Tag != (mle.Tag{1}) || b.known[ps[1].digest].Tag != (mle.Tag{2}) ||
		b.known[ps[2].digest] != ob.refs[0] {
		t.Fatalf("known = %v", b.known)
	}
	if len(b.need) != 2 || b.need[0] != ps[3].digest || b.need[1] != ps[5].digest {
		t.Fatalf("need = %x, want the digests of pieces 4 and 6 once each", b.need)
	}
}

// claim gives each needed digest to one file of the run: the second file derives only
// what the first did not claim.
func TestBatchClaim(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	a := newFilePut(t, c, nil)
	b2 := newFilePut(t, c, a.run)
	ps := piecesOf(c, 1, 2, 3)
	ba, bb := a.newBatch(ps[:2]), b2.newBatch(ps[1:])
	ba.reuse()
	ba.claim()
	bb.reuse()
	bb.claim()
	if len(ba.claimed) != 2 || len(a.owned) != 2 || !ba.owned[ps[1].digest] {
		t.Fatalf("first file claimed %d, owns %d", len(ba.claimed), len(a.owned))
	}
	if len(bb.claimed) != 1 || bb.claimed[0] != ps[2].digest || bb.owned[ps[1].digest] || len(bb.futures) != 2 {
		t.Fatalf("second file claimed %x of %d futures", bb.claimed, len(bb.futures))
	}
	if bb.futures[ps[1].digest] != ba.futures[ps[1].digest] || !bb.deferred(ps[1]) || bb.deferred(ps[2]) {
		t.Fatal("the shared digest is not the first file's future, deferred by the second")
	}
	ba.derive() // resolve the futures, as store does
	bb.derive()
	for _, f := range a.owned {
		f.markStored()
	}
}

// derive gets the key server's keys for the claimed digests and the others' futures; a
// failing key server leaves a fallback reason and frees the digests for a retry; a
// cancelled context fails the file.
func TestBatchDerive(t *testing.T) {
	ks := &countingKS{}
	c := newClient(t, newBackend(t), ks)
	fp := newFilePut(t, c, nil)
	ps := piecesOf(c, 1, 2, 2)
	b := fp.newBatch(ps)
	b.reuse()
	b.claim()
	if err := b.derive(); err != nil {
		t.Fatal(err)
	}
	want, _ := mle.LocalKeys{}.DeriveKeys(ctx, []mle.Digest{ps[0].digest, ps[1].digest})
	if len(b.keyOf) != 2 || b.keyOf[ps[0].digest] != want[0] || b.keyOf[ps[1].digest] != want[1] || fp.fallback != nil {
		t.Fatalf("keys %v, fallback %v", b.keyOf, fp.fallback)
	}
	if ks.n.Load() != 2 {
		t.Fatalf("key server asked for %d digests, want 2", ks.n.Load())
	}

	down := errors.New("key server down")
	c2 := newClient(t, newBackend(t), failingKS{down})
	fp2 := newFilePut(t, c2, nil)
	b2 := fp2.newBatch(piecesOf(c2, 1))
	b2.reuse()
	b2.claim()
	if err := b2.derive(); err != nil || !errors.Is(fp2.fallback, down) || len(b2.keyOf) != 0 {
		t.Fatalf("err %v, fallback %v, keys %d", err, fp2.fallback, len(b2.keyOf))
	}
	if mine, _ := fp2.run.claim(b2.need); len(mine) != 1 {
		t.Fatal("a failed digest is not claimable again")
	}

	// Waiting on another file's key under a cancelled context fails with the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	fp3 := newFilePut(t, c, nil)
	fp3.ctx = cctx
	owner := newFilePut(t, c, fp3.run)
	ob := owner.newBatch(piecesOf(c, 7))
	ob.reuse()
	ob.claim() // claimed, never resolved
	b3 := fp3.newBatch(piecesOf(c, 7))
	b3.reuse()
	b3.claim()
	if err := b3.derive(); !errors.Is(err, context.Canceled) {
		t.Fatalf("derive under a cancelled context: %v", err)
	}
	ob.derive()
}

// encrypt encrypts new chunks under their derived key (or a random one when there is
// none), records suite, scheme and tag, keeps reused chunks' references, and leaves
// chunks other files own alone.
func TestBatchEncrypt(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	fp := newFilePut(t, c, nil)
	ps := piecesOf(c, 1, 2)
	fp.prev[ps[1].digest] = chunkRef{Digest: ps[1].digest, Tag: mle.Tag{9}}
	b := fp.newBatch(ps)
	b.reuse()
	b.claim()
	if err := b.derive(); err != nil {
		t.Fatal(err)
	}
	b.encrypt()
	e := b.enc[0]
	m := c.mleFor(len(ps[0].msg))
	tag, _ := mle.TagGen(e.ct)
	if !e.fresh || e.err != nil || e.ref.Key != b.keyOf[ps[0].digest] || e.ref.Flags&flagRandomKey != 0 ||
		e.ref.Suite != m.Suite || e.ref.Scheme != m.Scheme || e.ref.Tag != tag || e.ref.Digest != ps[0].digest {
		t.Fatalf("new chunk: %+v", e.ref)
	}
	if msg, err := mle.Dec(e.ref.Key, e.ct, nil); err != nil || string(msg) != string(ps[0].msg) {
		t.Fatalf("ciphertext does not decrypt to the message: %v", err)
	}
	if b.enc[1].fresh || b.enc[1].ref.Tag != (mle.Tag{9}) {
		t.Fatalf("reused chunk: %+v", b.enc[1])
	}

	c2 := newClient(t, newBackend(t), failingKS{errors.New("down")})
	fb := newFilePut(t, c2, nil).newBatch(piecesOf(c2, 1))
	fb.reuse()
	fb.claim()
	fb.derive()
	fb.encrypt()
	if fb.enc[0].ref.Flags&flagRandomKey == 0 || fb.enc[0].ref.Key == (mle.Key{}) {
		t.Fatalf("fallback chunk: %+v", fb.enc[0].ref)
	}
}

// send stores a repeat within a file once, and takes a chunk another file of the run owns
// from that file once it is stored.
func TestBatchSend(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	owner := newFilePut(t, c, nil)
	fp := newFilePut(t, c, owner.run)
	shared := piecesOf(c, 5)
	ob := owner.newBatch(shared)
	ob.reuse()
	ob.claim()
	b := fp.newBatch(piecesOf(c, 1, 1, 5))
	b.reuse()
	b.claim()
	if !b.deferred(b.pieces[2]) {
		t.Fatal("the owner's chunk is not deferred")
	}
	done := make(chan error, 1)
	go func() { // send waits for the owner's chunk
		if err := b.derive(); err != nil {
			done <- err
			return
		}
		b.encrypt()
		done <- b.send()
	}()
	if err := ob.derive(); err != nil {
		t.Fatal(err)
	}
	ob.encrypt()
	if err := ob.send(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.refs[0] != b.refs[1] || b.refs[2] != ob.refs[0] {
		t.Fatal("repeat or shared chunk not referenced once")
	}
	if fp.kept != 2 || len(fp.mine) != 1 || len(fp.waits) != 3 {
		t.Fatalf("kept %d, mine %d, waits %d; want 2, 1, 3", fp.kept, len(fp.mine), len(fp.waits))
	}
	fp.run.wait()
	if owner.sent != 1 || fp.sent != 1 {
		t.Fatalf("%d + %d chunks sent, want 1 + 1 (one per distinct chunk)", owner.sent, fp.sent)
	}
}

// commit writes the record after the uploads, with the key server's key id unless some
// keys fell back, and reports the file once.
func TestFileCommit(t *testing.T) {
	for _, kd := range []mle.KeyDeriver{idKS{}, failingKS{errors.New("down")}} {
		var reported []string
		c, err := New(newBackend(t), NewMasterKey(), Options{Keys: kd, Jobs: 1,
			Events: Events{File: func(p string, err error) { reported = append(reported, p) }}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fp := newFilePut(t, c, nil)
		b := fp.newBatch(piecesOf(c, 1, 2))
		if err := b.store(); err != nil {
			t.Fatal(err)
		}
		fp.commit()
		fp.close()
		fp.run.waitCommits()
		rec, err := c.readRecord(ctx, fp.encDir, fp.encName+keySuffix)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Chunks) != 2 || rec.Size != 8192 || len(reported) != 1 || fp.sum.Files != 1 || fp.sum.Err() != nil {
			t.Fatalf("record %d chunks %d bytes; reported %v; summary %+v", len(rec.Chunks), rec.Size, reported, fp.sum)
		}
		wantFallback := kd != mle.KeyDeriver(idKS{})
		if (fp.sum.FallbackFiles() == 1) != wantFallback || (rec.KeyID == "k1") == wantFallback {
			t.Fatalf("key id %q with %d fallback files", rec.KeyID, fp.sum.FallbackFiles())
		}
	}
}

// idKS is plain MLE key derivation under a key id.
type idKS struct{ mle.LocalKeys }

func (idKS) KeyID() string { return "k1" }

// previous reuses the stored version's chunks, but not version 1 references (no suite and
// scheme named) nor fallback chunks while a key server is configured; an unchanged file is
// counted and not read.
func TestFilePrevious(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	local := filepath.Join(t.TempDir(), "f")
	write(t, local, []byte("new content"))
	fi, err := os.Lstat(local)
	if err != nil {
		t.Fatal(err)
	}
	fp := newFilePut(t, c, nil)
	fp.t.local, fp.fi = local, fi
	good := chunkRef{Digest: mle.Digest{1}, Suite: mle.SHA256, Scheme: mle.HCE2, PlainLen: 1}
	v1 := chunkRef{Digest: mle.Digest{2}, PlainLen: 1}
	random := chunkRef{Digest: mle.Digest{3}, Suite: mle.SHA256, Scheme: mle.HCE2, Flags: flagRandomKey, PlainLen: 1}
	old := &record{Type: typeFile, Size: 2, Chunks: []chunkRef{good, random}}
	if _, err := c.writeRecord(ctx, fp.encDir, fp.encName+keySuffix, old); err != nil {
		t.Fatal(err)
	}
	if unchanged, err := fp.previous(); err != nil || unchanged {
		t.Fatal(unchanged, err)
	}
	if len(fp.prev) != 1 || fp.prev[good.Digest] != good {
		t.Fatalf("reusable: %v", fp.prev)
	}

	// A version 1 record (written by an older veil) names no suite and scheme: nothing reused.
	path := storage.Join(fp.encDir, fp.encName+keySuffix)
	b := sealV1(c.keys, &record{Type: typeFile, Size: 1, Chunks: []chunkRef{v1}}, path)
	if err := c.be.Put(ctx, fp.encDir, fp.encName+keySuffix, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	c.noteRecord(path, b)
	fp1 := newFilePut(t, c, nil)
	fp1.fi = fi
	if rec, err := c.readRecord(ctx, fp.encDir, fp.encName+keySuffix); err != nil || len(rec.Chunks) != 1 || rec.Chunks[0].Scheme != 0 {
		t.Fatalf("version 1 record: %v", err)
	}
	if unchanged, err := fp1.previous(); err != nil || unchanged || len(fp1.prev) != 0 {
		t.Fatalf("unchanged %v (%v), reusable %v", unchanged, err, fp1.prev)
	}

	old = &record{Type: typeFile, Size: uint64(fi.Size()), MTime: fi.ModTime().UnixNano(), Mode: unixMode(fi.Mode()),
		Chunks: []chunkRef{{Digest: mle.Digest{1}, Suite: mle.SHA256, Scheme: mle.HCE2, PlainLen: uint32(fi.Size())}}}
	if _, err := c.writeRecord(ctx, fp.encDir, fp.encName+keySuffix, old); err != nil {
		t.Fatal(err)
	}
	fp2 := newFilePut(t, c, nil)
	fp2.fi = fi
	if unchanged, err := fp2.previous(); err != nil || !unchanged || fp2.sum.Unchanged != 1 || fp2.sum.ChunksKept != 1 {
		t.Fatalf("unchanged %v (%v), summary %+v", unchanged, err, fp2.sum)
	}
}

// sealV1 seals r as a version 1 key record (no suite and scheme per chunk), as veil wrote
// before version 2.
func sealV1(k *userKeys, r *record, encPath string) []byte {
	b := []byte{r.Type}
	b = binary.BigEndian.AppendUint32(b, r.Mode)
	b = binary.BigEndian.AppendUint64(b, uint64(r.MTime))
	b = binary.BigEndian.AppendUint64(b, r.Size)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Target)))
	b = append(b, r.Target...)
	b = append(b, byte(len(r.KeyID)))
	b = append(b, r.KeyID...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Chunks)))
	for _, c := range r.Chunks {
		b = append(b, c.Flags)
		b = binary.BigEndian.AppendUint32(b, c.PlainLen)
		b = binary.BigEndian.AppendUint32(b, c.MsgLen)
		b = append(append(append(b, c.Key[:]...), c.Digest[:]...), c.Tag[:]...)
	}
	out := make([]byte, recordHeader)
	out[0] = 1
	return k.records.Seal(out, out[1:recordHeader], b, recordAD(1, encPath))
}
