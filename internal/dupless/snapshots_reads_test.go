package dupless

import (
	"context"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// rootGetsBE counts the tree roots a client reads.
type rootGetsBE struct {
	storage.Backend
	n atomic.Int64
}

func (b *rootGetsBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if d == rootsDir {
		b.n.Add(1)
	}
	return b.Backend.Get(ctx, d, n)
}

// A command that lists every snapshot reads each root once: the newest, which every
// command reads first, is not read again.
func TestSnapshotsReadEachRootOnce(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "a"), []byte("a"))
	mustPut(t, c, filepath.Join(dir, "d"), "")
	write(t, filepath.Join(dir, "d", "b"), []byte("b"))
	mustPut(t, c, filepath.Join(dir, "d"), "")
	counting := &rootGetsBE{Backend: be}
	c2, err := New(counting, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	snaps, err := c2.Snapshots(ctx)
	if err != nil || len(snaps) != 2 {
		t.Fatalf("snapshots: %v %v", snaps, err)
	}
	if n := counting.n.Load(); n != 2 {
		t.Fatalf("%d tree roots read for 2 snapshots, want 2", n)
	}
}
