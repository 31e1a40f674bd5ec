package dupless

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// A put's chunk counts add up over the files it stored: chunks = sent + already stored,
// also when a file's chunks went out but the file never committed (its record failed, or
// the run was interrupted). Found by a user walkthrough: an interrupted sync said "439
// chunks, 212 sent, 439 already stored" (the chunks of files cut short counted as sent).
func TestPutChunkCountsAddUp(t *testing.T) {
	fastRetries(t)
	be := &recordFailBE{Backend: newBackend(t)}
	c, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if be.bad, err = c.keys.encName("bad"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(dir, "good"), randBytes(300_000, 1))
	write(t, filepath.Join(dir, "bad"), randBytes(300_000, 2)) // its chunks go out, its record does not
	sum, err := c.Put(context.Background(), []string{dir}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Errors) != 1 || sum.Files != 1 || sum.Chunks == 0 {
		t.Fatalf("want 1 file stored and 1 failed: %d stored, %v", sum.Files, sum.Err())
	}
	if sum.ChunksUploaded+sum.ChunksKept != sum.Chunks {
		t.Errorf("%d chunks, %d sent, %d already stored: sent + already stored != chunks", sum.Chunks, sum.ChunksUploaded, sum.ChunksKept)
	}
}

// recordFailBE refuses every write of the key record named bad (+ keySuffix).
type recordFailBE struct {
	storage.Backend
	bad string
}

func (b *recordFailBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if name == b.bad+keySuffix {
		return errors.New("record refused")
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}
