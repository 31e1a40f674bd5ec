package dupless

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// A device that reads every snapshot (prune, forget, log, check) keeps a copy of each
// base it reads, so that its next such command reads no base from the storage; the copies
// stay within baseDiskBytes, and the one it used last outlives one used before. Open
// since session 15: only the newest 4 copies were kept (by when they were written), so
// such a device read every older base again on each run.
func TestBaseCopiesServeEverySnapshot(t *testing.T) {
	rootForms(t, 8<<10, 1) // every change a new base
	be := &baseGetsBE{Backend: newBackend(t)}
	master := NewMasterKey()
	w, err := New(be, master, Options{Keys: mle.LocalKeys{}}) // a writer without copies
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if _, err := w.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 6 {
		src := filepath.Join(dir, fmt.Sprint("lone", i))
		write(t, src, randBytes(100, uint64(i)))
		if _, err := w.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
	}
	pc := &PutCache{Path: filepath.Join(t.TempDir(), "x.put"), Location: "here"}
	open := func() *Client { // a reader device: a new process each time
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Cache: pc})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	readAll := func() []*treeRoot {
		t.Helper()
		roots, err := open().loadRoots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return roots
	}
	be.n.Store(0)
	roots := readAll()
	if be.n.Load() != 7 {
		t.Fatalf("first reading of 7 snapshots: %d base reads, want 7", be.n.Load())
	}
	be.n.Store(0)
	readAll()
	if be.n.Load() != 0 {
		t.Fatalf("second reading: %d base reads, want none (the copies)", be.n.Load())
	}

	// Bounded: room for three copies.
	copies := func() map[string]time.Time {
		ents, _ := os.ReadDir(baseDiskDir(pc))
		out := map[string]time.Time{}
		var total int64
		for _, e := range ents {
			fi, _ := e.Info()
			out[e.Name()], total = fi.ModTime(), total+fi.Size()
		}
		if total > baseDiskBytes {
			t.Fatalf("%d bytes of copies, bound %d", total, baseDiskBytes)
		}
		return out
	}
	fi, err := os.Stat(filepath.Join(baseDiskDir(pc), baseName(roots[0].base.id)))
	if err != nil {
		t.Fatal(err)
	}
	old := baseDiskBytes
	baseDiskBytes = 3*fi.Size() + fi.Size()/2
	t.Cleanup(func() { baseDiskBytes = old })
	os.RemoveAll(baseDiskDir(pc))
	readAll()
	kept := copies()
	if len(kept) != 3 {
		t.Fatalf("%d copies kept, want 3", len(kept))
	}
	bySeq := map[string]uint64{}
	for _, r := range roots {
		bySeq[baseName(r.base.id)] = r.Seq
	}
	lru, notKept := "", uint64(0)
	for n, m := range kept {
		if lru == "" || m.Before(kept[lru]) {
			lru = n
		}
	}
	for n, s := range bySeq {
		if _, ok := kept[n]; !ok {
			notKept = s
		}
	}
	time.Sleep(10 * time.Millisecond)
	be.n.Store(0)
	if _, err := open().fetchRootSeq(ctx, bySeq[lru]); err != nil || be.n.Load() != 0 {
		t.Fatalf("root on a kept copy: %v, %d base reads", err, be.n.Load())
	}
	if _, err := open().fetchRootSeq(ctx, notKept); err != nil || be.n.Load() != 1 {
		t.Fatalf("root on a copy not kept: %v, %d base reads, want 1", err, be.n.Load())
	}
	if now := copies(); len(now) != 3 {
		t.Fatalf("%d copies kept, want 3", len(now))
	} else if _, ok := now[lru]; !ok {
		t.Fatal("the copy used last was evicted before one used earlier")
	}
}
