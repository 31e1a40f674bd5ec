package dupless

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// aheadBE holds every read of a tree root until the record object named rec has been
// asked for (or 5 s pass, which the test reports), and counts the reads of rec.
type aheadBE struct {
	storage.Backend
	rec      string
	once     sync.Once
	asked    chan struct{}
	recReads atomic.Int64
	late     atomic.Bool
}

func (b *aheadBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	switch {
	case b.rec != "" && storage.Join(d, n) == b.rec:
		b.recReads.Add(1)
		b.once.Do(func() { close(b.asked) })
	case b.rec != "" && d == rootsDir:
		select {
		case <-b.asked:
		case <-time.After(5 * time.Second):
			b.late.Store(true)
		}
	}
	return b.Backend.Get(ctx, d, n)
}

// A get of a file asks for its record while the tree root is looked up, not after it
// (one round trip less), reads it once, and still checks it against that root: a record
// the root does not list is refused as before.
func TestGetReadsRecordWithRoot(t *testing.T) {
	be := &aheadBE{Backend: newBackend(t), asked: make(chan struct{})}
	dev := devices(t, be)
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, randBytes(4096, 70))
	if _, err := dev().Put(ctx, []string{src}, "d"); err != nil {
		t.Fatal(err)
	}
	c := dev()
	encDir, encName, err := c.encFile("d/f")
	if err != nil {
		t.Fatal(err)
	}
	be.rec = storage.Join(encDir, encName+keySuffix)
	sameFile(t, c, src, "d/f")
	if be.late.Load() || be.recReads.Load() != 1 {
		t.Fatalf("record asked for after the root lookup: %v; record read %d times, want 1", be.late.Load(), be.recReads.Load())
	}
	// The record replaced behind the root's back (an older version put back): refused.
	old, _ := c.getObjectNow(ctx, encDir, encName+keySuffix)
	write(t, src, randBytes(4096, 71))
	if _, err := dev().Put(ctx, []string{src}, "d"); err != nil {
		t.Fatal(err)
	}
	if err := be.Backend.Put(ctx, encDir, encName+keySuffix, bytesReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	be.rec = ""
	if _, err := dev().Get(ctx, "d/f", filepath.Join(t.TempDir(), "out")); err == nil || !strings.Contains(err.Error(), "root") {
		t.Fatalf("get of a rolled-back record: %v, want refused against the root", err)
	}
}
