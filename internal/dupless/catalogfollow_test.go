package dupless

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// Follow costs one request while nothing changed (a STAT of the next root number, not
// found) and, once another client published roots, makes the newest current: the previous
// current stays readable, Snapshots lists the new roots, and Changes names what differs
// per folder (a changed file, a removed one, an added folder).
func TestCatalogFollow(t *testing.T) {
	be := &rootReqBE{countingBE: countingBE{Backend: newBackend(t)}}
	master := NewMasterKey()
	other, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer other.Close()
	dir := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(dir, "changed"), []byte("version 0"))
	write(t, filepath.Join(dir, "removed"), []byte("removed"))
	write(t, filepath.Join(dir, "kept"), []byte("kept"))
	mustPut(t, other, dir, "")
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	cat, err := c.OpenCatalog(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	old := cat.Current()
	before := be.snap()
	if prev, err := cat.Follow(ctx); prev != nil || err != nil {
		t.Fatalf("follow with nothing new: %v %v", prev, err)
	}
	if d := be.snap().since(before); d.reqs != 1 || d.gets != 0 || d.lists != 0 {
		t.Errorf("follow with nothing new: %+v, want 1 request", d)
	}

	write(t, filepath.Join(dir, "changed"), []byte("version 1"))
	write(t, filepath.Join(dir, "sub", "added"), []byte("added"))
	mustPut(t, other, dir, "")
	if _, err := other.Remove(ctx, "d/removed", false); err != nil {
		t.Fatal(err)
	}
	prev, err := cat.Follow(ctx)
	if err != nil || prev != old {
		t.Fatalf("follow after two commands: %v %v, want the previous view", prev, err)
	}
	cur := cat.Current()
	if cur.Snap.Seq != old.Snap.Seq+2 || cat.Count() != 3 {
		t.Fatalf("current %d (was %d), %d snapshots; want 2 newer, 3", cur.Snap.Seq, old.Snap.Seq, cat.Count())
	}
	snaps, err := cat.Snapshots(ctx)
	if err != nil || len(snaps) != 3 || snaps[2].Seq != cur.Snap.Seq {
		t.Fatalf("snapshots after follow: %+v %v", snaps, err)
	}
	if v, err := cat.View(ctx, old.Snap.Seq); err != nil || v != old {
		t.Errorf("the previous current: %v %v, want it held", v, err)
	}
	got, err := cur.Changes(ctx, old, "d")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b EntryChange) int { return strings.Compare(a.Name, b.Name) })
	want := []EntryChange{{Name: "changed"}, {Name: "removed", Gone: true}, {Name: "sub"}}
	if !slices.Equal(got, want) {
		t.Errorf("changes in d: %+v, want %+v", got, want)
	}
	if got, err := cur.Changes(ctx, old, ""); err != nil || len(got) != 1 || got[0] != (EntryChange{Name: "d", Meta: true}) {
		t.Errorf("changes at the top: %+v %v, want d's metadata (its time)", got, err)
	}
	if prev, err := cat.Follow(ctx); prev != nil || err != nil {
		t.Errorf("follow again: %v %v, want nothing new", prev, err)
	}
}

// A catalog not asked for a day follows a newer root although a forget dropped current's
// root and the roots after it, and a later forget deleted their gap marks: the number
// after current's is absent again, which alone would say nothing changed (found by
// review: a mount idle over two daily forgets stayed on its root for good). Asked so late,
// Follow also STATs current's own root: present, and its successor absent, it is still
// the newest (two requests, no read).
func TestCatalogFollowAfterMarksDeleted(t *testing.T) {
	be := &rootReqBE{countingBE: countingBE{Backend: newBackend(t)}}
	master := NewMasterKey()
	other, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer other.Close()
	dir := filepath.Join(t.TempDir(), "d")
	put := func(content string) {
		t.Helper()
		write(t, filepath.Join(dir, "f"), []byte(content))
		mustPut(t, other, dir, "")
	}
	put("version 0") // root 1
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	cat, err := c.OpenCatalog(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	old := cat.Current()
	cat.confirmed = time.Now().Add(-markGrace)
	before := be.snap()
	if prev, err := cat.Follow(ctx); prev != nil || err != nil {
		t.Fatalf("late follow with nothing new: %v %v", prev, err)
	}
	if d := be.snap().since(before); d.reqs != 2 || d.gets != 0 || d.lists != 0 {
		t.Errorf("late follow with nothing new: %+v, want 2 requests (STATs)", d)
	}
	for i := 1; i <= 3; i++ {
		put("version " + itoa(i)) // roots 2, 3, 4
	}
	forget := func(age time.Duration, keep ...bool) { // as TestRootProbeGapMark's
		t.Helper()
		written, err := other.rootListing(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for s, w := range written {
			written[s] = w.Add(-age)
		}
		roots, err := other.loadRoots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snaps := make([]Snapshot, len(roots))
		for i, r := range roots {
			snaps[i] = snapshotOf(r)
		}
		if err := other.dropRoots(ctx, written, snaps, keep); err != nil {
			t.Fatal(err)
		}
	}
	forget(0, false, false, false, true) // 1, 2 and 3 become marks
	forget(markGrace+time.Minute, true)  // a day later: the marks go
	if n, err := other.rootNumbers(ctx); err != nil || !slices.Equal(n, []uint64{4}) {
		t.Fatalf("numbers after the forgets: %v %v, want [4]", n, err)
	}
	cat.confirmed = time.Now().Add(-markGrace)
	prev, err := cat.Follow(ctx)
	if err != nil || prev != old || cat.Current().Snap.Seq != 4 {
		t.Fatalf("follow after the marks went: prev %v (want the old view), err %v, current %d (want 4)", prev, err, cat.Current().Snap.Seq)
	}
	before = be.snap()
	if prev, err := cat.Follow(ctx); prev != nil || err != nil {
		t.Fatalf("follow just after: %v %v", prev, err)
	}
	if d := be.snap().since(before); d.reqs != 1 {
		t.Errorf("follow just after a check: %+v, want 1 request", d)
	}
}

// Follow never makes an older root current: a storage rolled back below the newest root
// this device saw (a put beside the mount published it) is ErrRollback, as for any
// command, checked at once (the next number is present) and late (followLate); current
// stays the root it was.
func TestCatalogFollowRefusesRollback(t *testing.T) {
	be := newBackend(t)
	device := memDevices(t, be)()
	dir := filepath.Join(t.TempDir(), "d")
	put := func(content string) {
		t.Helper()
		write(t, filepath.Join(dir, "f"), []byte(content))
		mustPut(t, device(), dir, "")
	}
	put("version 0") // root 1
	cat, err := device().OpenCatalog(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	put("version 1") // root 2
	put("version 2") // root 3: the device remembers it
	if err := be.Delete(ctx, rootsDir, rootName(3)); err != nil {
		t.Fatal(err)
	}
	for _, late := range []bool{false, true} {
		if late {
			cat.confirmed = time.Now().Add(-markGrace)
		}
		prev, err := cat.Follow(ctx)
		if !errors.Is(err, ErrRollback) || prev != nil || cat.Current().Snap.Seq != 1 {
			t.Errorf("follow (late %v) over a rollback: %v %v, current %d; want ErrRollback and root 1", late, prev, err, cat.Current().Snap.Seq)
		}
	}
}
