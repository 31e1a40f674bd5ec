package dupless

import (
	"bytes"
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
	putLongAfter(t)
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

// A put of an unchanged tree writes nothing: no record, and neither the put cache (read
// in the background while the lock is taken) nor the root memory is rewritten.
func TestUnchangedPutWritesNothing(t *testing.T) {
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	dev.put(t, be, master, src, "")
	dev.put(t, be, master, src, "") // the first put's cache, rewritten for its own root
	cache, _ := os.ReadFile(dev.cache.Path)
	mem, _ := os.ReadFile(dev.mem.(*rootFile).path)
	be.writes.Store(0)
	if sum := dev.putScanned(t, be, master, StartPrescan([]string{src}, "", nil), nil); sum.Unchanged != n {
		t.Fatalf("%d unchanged, want %d", sum.Unchanged, n)
	}
	cache2, _ := os.ReadFile(dev.cache.Path)
	mem2, _ := os.ReadFile(dev.mem.(*rootFile).path)
	if be.writes.Load() != 0 || len(cache) == 0 || !bytes.Equal(cache, cache2) || !bytes.Equal(mem, mem2) {
		t.Fatalf("unchanged put: %d records written, cache rewritten %v, root memory rewritten %v", be.writes.Load(), !bytes.Equal(cache, cache2), !bytes.Equal(mem, mem2))
	}
}

// A sync whose put changes nothing but whose removals drop records from the root rewrites
// the cache without the dropped entries (saveCache checks the root even when put noted
// nothing new).
func TestSyncRemovalRewritesCleanCache(t *testing.T) {
	be := newBackend(t)
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, _ := cacheTree(t)
	dev.put(t, be, master, src, "")
	dev.put(t, be, master, src, "")
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3, Roots: dev.mem, Cache: dev.cache})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before, err := c.keys.readCache(dev.cache)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(src, "d3", "sub")
	fi, _ := os.Stat(dir)
	os.Remove(filepath.Join(dir, "f5"))
	os.Chtimes(dir, fi.ModTime(), fi.ModTime()) // the directory's record stays as stored: put notes nothing
	if res, err := c.Sync(ctx, src, "", false); err != nil || res.Removed != 1 || res.Put.Unchanged != res.Put.Files {
		t.Fatalf("sync: %+v, %v; want one removal and every file unchanged", res, err)
	}
	after, err := c.keys.readCache(dev.cache)
	if err != nil || len(after.Entries) != len(before.Entries)-1 {
		t.Fatalf("cache after the sync: %d entries (err %v), want %d", len(after.Entries), err, len(before.Entries)-1)
	}
}
