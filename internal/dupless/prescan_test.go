package dupless

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// putScanned runs PutScanned of pre as the CLI does: one new Client per command.
func (d *device) putScanned(t *testing.T, be storage.Backend, master []byte, pre *Prescan, exclude []string) *Summary {
	t.Helper()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Roots: d.mem, Cache: d.cache, Exclude: exclude,
		Logger: slog.New(slog.NewTextHandler(d.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sum, err := c.PutScanned(ctx, pre)
	if err != nil {
		t.Fatalf("put: %v (%v)", err, sum.Errors)
	}
	return sum
}

// A put from a prescan stores what Put stores, skips the unchanged files through the put
// cache, and still sees a file changed before the walk.
func TestPutScannedAsPut(t *testing.T) {
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	sum := dev.putScanned(t, be, master, StartPrescan([]string{src}, "", nil), nil)
	if sum.Files != n || sum.Symlinks != 1 || sum.Unchanged != 0 {
		t.Fatalf("first put: %d files, %d links, %d unchanged; want %d, 1, 0", sum.Files, sum.Symlinks, sum.Unchanged, n)
	}
	if got := dev.put(t, be, master, src, ""); got.Unchanged != n {
		t.Fatalf("Put after PutScanned: %d unchanged, want %d (the same records)", got.Unchanged, n)
	}
	be.reads.Store(0)
	sum = dev.putScanned(t, be, master, StartPrescan([]string{src}, "", nil), nil)
	if sum.Files != n || sum.Unchanged != n || be.reads.Load() != 0 {
		t.Fatalf("second put: %d files, %d unchanged, %d record reads; want %d, %d, 0", sum.Files, sum.Unchanged, be.reads.Load(), n, n)
	}
	write(t, filepath.Join(src, "d1", "sub", "f2"), []byte("changed, and of another size"))
	sum = dev.putScanned(t, be, master, StartPrescan([]string{src}, "", nil), nil)
	if sum.Files != n || sum.Unchanged != n-1 || sum.ChunksUploaded == 0 {
		t.Fatalf("put of one changed file: %d files, %d unchanged, %d chunks sent; want %d, %d, > 0", sum.Files, sum.Unchanged, sum.ChunksUploaded, n, n-1)
	}
}

// The walk's exclusions and failures reach the summary as Put's own walk reports them,
// and a prescan of other exclusions than the client's is not used.
func TestPutScannedExclusionsAndFailures(t *testing.T) {
	be := newBackend(t)
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	twin := filepath.Join(t.TempDir(), filepath.Base(src)) // a second source for one destination
	os.MkdirAll(twin, 0o700)
	sum := dev.putScanned(t, be, master, StartPrescan([]string{src, twin}, "", []string{"d0"}), []string{"d0"})
	if sum.Excluded != 1 || sum.Files != n-6 || len(sum.Errors) != 1 || sum.Errors[0].Path != twin {
		t.Fatalf("put: %d excluded, %d files, errors %v; want 1, %d, one for %s", sum.Excluded, sum.Files, sum.Errors, n-6, twin)
	}
	sum = dev.putScanned(t, be, master, StartPrescan([]string{src}, "", []string{"d0"}), []string{"d1"})
	if sum.Excluded != 1 || sum.Files != n-6 {
		t.Fatalf("put with other exclusions than the prescan's: %d excluded, %d files; want the client's walk (1, %d)", sum.Excluded, sum.Files, n-6)
	}
}
