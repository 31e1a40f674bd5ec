package dupless

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// pairedKS answers its first request only once the second has arrived.
type pairedKS struct {
	calls  atomic.Int64
	second chan struct{}
}

func (k *pairedKS) DeriveKeys(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	switch k.calls.Add(1) {
	case 1:
		select {
		case <-k.second:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case 2:
		close(k.second)
	}
	return mle.LocalKeys{}.DeriveKeys(ctx, ds)
}

// A large file's next batch asks for its keys while the batch before it still waits for
// its own (the key server round trip overlaps the rest of the work): with a key server
// that answers the first request only once the second has arrived, the put completes
// (one batch at a time would wait forever), under derived keys, and the file reads back.
func TestPutDerivesNextBatchKeysAhead(t *testing.T) {
	ks := &pairedKS{second: make(chan struct{})}
	c := newClient(t, newBackend(t), ks)
	dir := t.TempDir()
	data := randBytes(3*batchBytes, 21)
	write(t, filepath.Join(dir, "big"), data)
	ctx, cancel := context.WithCancel(ctx)
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second)) // a regression fails, not hangs
	}
	defer cancel()
	sum, err := c.Put(ctx, []string{filepath.Join(dir, "big")}, "")
	if err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if n := ks.calls.Load(); n != 3 || sum.FallbackFiles() != 0 {
		t.Fatalf("%d key requests for a file of 3 batches (want 3), %d files under random keys", n, sum.FallbackFiles())
	}
	out := filepath.Join(t.TempDir(), "big")
	if s, err := c.Get(ctx, "big", out); err != nil || s.Err() != nil {
		t.Fatal(err, s.Err())
	}
	if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, data) {
		t.Fatal("the file read back differs", err)
	}
}

// A piece that owns its chunk's array (the splitter's room) is encrypted in place, once:
// the ciphertext takes the array and decrypts to the chunk; a piece without room keeps its
// message; a second encryption of the batch's piece (take) no longer has the room.
func TestEncryptInPlace(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	chunk := randBytes(1<<20+5, 31)
	room := withRoom(chunk)
	ps := prepareAll(c.mleFor, [][]byte{room[mle.HeaderSize:], bytes.Clone(chunk)}, true)
	ps[0].room = room
	b := newFilePut(t, c, nil).newBatch(ps)
	for i, inPlace := range []bool{true, false} {
		p := b.take(i)
		e := c.encryptChunk(p, chunkRef{Key: mle.Key(p.digest), Digest: p.digest})
		if e.err != nil {
			t.Fatal(e.err)
		}
		if shared := &e.ct[0] == &room[0]; shared != inPlace {
			t.Fatalf("piece %d: ciphertext in the chunk's array %v, want %v", i, shared, inPlace)
		}
		if !inPlace && !bytes.Equal(p.msg, chunk) {
			t.Fatal("a piece without room lost its message")
		}
		got, err := mle.Dec(e.ref.Key, e.ct, nil)
		if err != nil || !bytes.Equal(got, chunk) {
			t.Fatalf("piece %d: decrypts to %d bytes (%v), want the chunk", i, len(got), err)
		}
	}
	if b.pieces[0].room != nil {
		t.Fatal("take left the room to the batch: a second encryption would overwrite the ciphertext")
	}
}
