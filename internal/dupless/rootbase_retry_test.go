package dupless

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// loseRaceBE is a storage on which, before each of the first races moves of a root to
// its number, another device's command (race) publishes that number first; it counts the
// tree bases written.
type loseRaceBE struct {
	storage.Backend
	races int
	race  func()
	busy  atomic.Bool
	bases atomic.Int32
}

func (b *loseRaceBE) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	if dstDir == rootsDir && b.races > 0 && b.race != nil && b.busy.CompareAndSwap(false, true) {
		b.races--
		b.race()
		b.busy.Store(false)
	}
	return b.Backend.Move(ctx, srcDir, srcName, dstDir, dstName)
}

func (b *loseRaceBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if dir == basesDir {
		b.bases.Add(1)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// A command whose root needs a new base and loses its number to other commands, again
// and again, writes that base once: each retry puts its root on the base it already
// stored, with the other commands' changes as the delta. Open since session 15: each
// attempt wrote a new base, an orphan for prune per lost race.
func TestRetriedPublishWritesOneBase(t *testing.T) {
	rootForms(t, 8<<10, 4<<10)
	const races = 3
	be := &loseRaceBE{Backend: newBackend(t)}
	dev := devices(t, be)
	a, other := dev(), dev()
	if _, err := a.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 100 { // past a 4 KiB delta: a new base
		write(t, filepath.Join(dir, "many", fmt.Sprint(i)), randBytes(50, uint64(i)))
	}
	n := 0
	be.race = func() { // another device's lone put: a small delta on the old base
		n++
		src := filepath.Join(dir, fmt.Sprint("lone", n))
		write(t, src, randBytes(100, uint64(1000+n)))
		if _, err := other.Put(ctx, []string{src}, ""); err != nil {
			t.Error(err)
		}
	}
	be.races = races
	before := be.bases.Load()
	if _, err := a.Put(ctx, []string{filepath.Join(dir, "many")}, ""); err != nil {
		t.Fatal(err)
	}
	if be.races != 0 || n != races {
		t.Fatalf("the put lost %d races, want %d", n, races)
	}
	if got := be.bases.Load() - before; got != 1 {
		t.Errorf("%d bases written across %d lost races, want 1", got, races)
	}
	root := a.view.root
	if root.base == nil || len(root.delta) != races {
		t.Fatalf("root %d: base %v, %d changes; want the command's base and the %d lone files", root.Seq, root.base != nil, len(root.delta), races)
	}
	r := dev()
	latest, err := r.latestRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.scanRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if latest.Seq != root.Seq || !maps.Equal(latest.Entries, stored) {
		t.Fatalf("newest root %d lists %d records, %d stored; a published %d", latest.Seq, len(latest.Entries), len(stored), root.Seq)
	}
	sameFile(t, r, filepath.Join(dir, "many", "7"), "many/7")
	sameFile(t, r, filepath.Join(dir, "lone2"), "lone2")
}

// reuseBase takes the base a command wrote when the root's entries are that base's (no
// changes) or a small delta from it, never when the root is on an existing base or the
// delta is past chooseForm's bounds.
func TestReuseWrittenBase(t *testing.T) {
	rootForms(t, 1<<10, 1<<10)
	entries := map[string][32]byte{}
	for i := range 100 {
		entries[fmt.Sprintf("p%03d.key", i)] = [32]byte{byte(i)}
	}
	written := &rootBase{entries: maps.Clone(entries), sealed: []byte{1}}
	written.sum[0] = 1
	fresh := func(m map[string][32]byte) *treeRoot {
		return &treeRoot{Entries: m, base: &rootBase{entries: maps.Clone(m)}, delta: map[string]*[32]byte{}}
	}
	if r := fresh(maps.Clone(entries)); !r.reuseBase(written) || r.base != written || len(r.delta) != 0 {
		t.Errorf("same entries: not the written base with no changes")
	}
	small := maps.Clone(entries)
	small["new.key"] = [32]byte{9}
	delete(small, "p001.key")
	if r := fresh(small); !r.reuseBase(written) || len(r.delta) != 2 || r.delta["p001.key"] != nil || *r.delta["new.key"] != ([32]byte{9}) {
		t.Errorf("a file added, one removed: %v", r.delta)
	}
	large := maps.Clone(entries)
	for i := range 40 {
		large[fmt.Sprintf("q%03d.key", i)] = [32]byte{}
	}
	if r := fresh(large); r.reuseBase(written) {
		t.Errorf("40 files added to 100: the written base taken, want a new one")
	}
	onOld := fresh(maps.Clone(entries))
	onOld.base.sum[0] = 2 // an existing base (chooseForm kept the previous root's)
	if onOld.reuseBase(written) || onOld.reuseBase(nil) {
		t.Errorf("a root on an existing base moved to the written one")
	}
}
