package dupless

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// A Catalog reads the newest root when opened and no other: each snapshot's root is read
// when its view is first asked for, held while among the keep most recently used, and
// read again once dropped; the descriptions read every root once. Found by review: the
// mount loaded every snapshot's listing at start and held them all.
func TestCatalogLoadsSnapshotsOnDemand(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	dir := t.TempDir()
	for i := range 4 {
		write(t, filepath.Join(dir, "d", "f"), []byte(fmt.Sprint("version ", i)))
		mustPut(t, c, filepath.Join(dir, "d"), "")
	}
	c2, counting := countingClient(t, be, master, "")
	cat, err := c2.OpenCatalog(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if n := counting.n.Load(); n != 1 || cat.Count() != 4 {
		t.Fatalf("opening the catalog read %d roots (want 1, the newest) and lists %d snapshots (want 4)", n, cat.Count())
	}
	reads := func(what string, want int64, do func()) {
		t.Helper()
		counting.n.Store(0)
		do()
		if n := counting.n.Load(); n != want {
			t.Errorf("%s read %d roots, want %d", what, n, want)
		}
	}
	var snaps []Snapshot
	reads("describing the snapshots", 3, func() { snaps, err = cat.Snapshots(ctx) })
	if err != nil || len(snaps) != 4 || snaps[0].Seq >= snaps[3].Seq || snaps[3].Seq != cat.Current().Snap.Seq {
		t.Fatalf("snapshots: %+v %v", snaps, err)
	}
	reads("describing them again", 0, func() { cat.Snapshots(ctx) })
	content := func(seq uint64) string {
		t.Helper()
		v, err := cat.View(ctx, seq)
		if err != nil {
			t.Fatalf("view of snapshot %d: %v", seq, err)
		}
		n, err := v.Lookup(ctx, "d", "f")
		if err != nil {
			t.Fatalf("snapshot %d: %v", seq, err)
		}
		b := make([]byte, 64)
		k, err := cat.ReadAt(ctx, n, b, 0)
		if err != nil {
			t.Fatalf("snapshot %d: %v", seq, err)
		}
		return string(b[:k])
	}
	reads("the current view", 0, func() { content(snaps[3].Seq) })
	reads("a first view", 1, func() {
		var wg sync.WaitGroup
		for range 4 { // at once: loaded once
			wg.Add(1)
			go func() { defer wg.Done(); cat.View(ctx, snaps[0].Seq) }()
		}
		wg.Wait()
	})
	reads("a held view", 0, func() { content(snaps[0].Seq) })
	reads("a second view", 1, func() { content(snaps[1].Seq) })
	reads("the first again", 0, func() { content(snaps[0].Seq) })
	reads("a third view (dropping the second)", 1, func() { content(snaps[2].Seq) })
	reads("the first, still held", 0, func() { content(snaps[0].Seq) })
	var got string
	reads("the dropped second, reloaded", 1, func() { got = content(snaps[1].Seq) })
	if got != "version 1" {
		t.Errorf("snapshot %d reloaded reads %q, want %q", snaps[1].Seq, got, "version 1")
	}
}

// Views of several snapshots asked for at once, more than the Catalog holds, each read
// their own snapshot (run with -race: loads finish while others drop).
func TestCatalogConcurrentViews(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	for i := range 5 {
		write(t, filepath.Join(dir, "d", "f"), []byte(fmt.Sprint("version ", i)))
		mustPut(t, c, filepath.Join(dir, "d"), "")
	}
	cat, err := c.OpenCatalog(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := cat.Snapshots(ctx)
	if err != nil || len(snaps) != 5 {
		t.Fatalf("snapshots: %v %v", snaps, err)
	}
	var wg sync.WaitGroup
	for round := range 4 {
		for i, s := range snaps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := cat.View(ctx, s.Seq)
				if err != nil {
					t.Errorf("round %d, snapshot %d: %v", round, s.Seq, err)
					return
				}
				n, err := v.Lookup(ctx, "d", "f")
				b := make([]byte, 64)
				var k int
				if err == nil {
					k, err = cat.ReadAt(ctx, n, b, 0)
				}
				if want := fmt.Sprint("version ", i); err != nil || string(b[:k]) != want {
					t.Errorf("round %d, snapshot %d: %q %v, want %q", round, s.Seq, b[:k], err, want)
				}
			}()
		}
	}
	wg.Wait()
}
