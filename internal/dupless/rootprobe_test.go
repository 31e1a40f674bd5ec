package dupless

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// rootReqBE counts requests, and LISTs and GETs of .veil/roots, over a real backend.
type rootReqBE struct {
	countingBE
	lists, gets atomic.Int64
}

func (b *rootReqBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if d == rootsDir {
		b.gets.Add(1)
	}
	return b.countingBE.Get(ctx, d, n)
}

func (b *rootReqBE) List(ctx context.Context, d string) ([]storage.Info, error) {
	if d == rootsDir {
		b.lists.Add(1)
	}
	return b.countingBE.List(ctx, d)
}

// snap is what a test counts of one operation: requests, root LISTs, root GETs.
type snap struct{ reqs, lists, gets int64 }

func (b *rootReqBE) snap() snap  { return snap{b.n.Load(), b.lists.Load(), b.gets.Load()} }
func (s snap) since(t snap) snap { return snap{s.reqs - t.reqs, s.lists - t.lists, s.gets - t.gets} }

// probeDevice is one device of a user: a fresh Client per command over its remembered root.
type probeDevice struct {
	t      *testing.T
	be     storage.Backend
	master []byte
	mem    RootMemory
}

func (d *probeDevice) client() *Client {
	c, err := New(d.be, d.master, Options{Keys: mle.LocalKeys{}, Roots: d.mem})
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(c.Close)
	return c
}

func (d *probeDevice) put(name string, seed uint64) {
	d.t.Helper()
	p := filepath.Join(d.t.TempDir(), name)
	write(d.t, p, randBytes(512, seed))
	if _, err := d.client().Put(context.Background(), []string{p}, ""); err != nil {
		d.t.Fatal(err)
	}
}

func (d *probeDevice) rootSeq() uint64 {
	d.t.Helper()
	r, err := d.client().Root(context.Background())
	if err != nil {
		d.t.Fatal(err)
	}
	if r == nil {
		d.t.Fatal("no root")
	}
	return r.Seq
}

func probeDevices(t *testing.T) (*rootReqBE, func() *probeDevice) {
	be := &rootReqBE{countingBE: countingBE{Backend: newBackend(t)}}
	master := NewMasterKey()
	return be, func() *probeDevice {
		return &probeDevice{t: t, be: be, master: master, mem: RootFile(filepath.Join(t.TempDir(), "root.mem"), "")}
	}
}

// A command of a device that remembers a root reads the newest root without listing the
// roots: one GET of the next number (absent) and one of the remembered root.
func TestRootLookupNoListWithMemory(t *testing.T) {
	be, dev := probeDevices(t)
	d := dev()
	d.put("a", 1)
	before := be.snap()
	if got := d.rootSeq(); got != 1 {
		t.Fatalf("root %d, want 1", got)
	}
	if s := be.snap().since(before); s.lists != 0 || s.gets != 2 {
		t.Fatalf("root lookup with a remembered root: %d LISTs and %d GETs of roots, want 0 and 2", s.lists, s.gets)
	}
	before = be.snap()
	d.put("b", 2)
	if s := be.snap().since(before); s.lists != 0 {
		t.Fatalf("a put with a remembered root listed the roots %d times", s.lists)
	}
	// Without a memory (a new device), the roots are listed.
	before = be.snap()
	if got := dev().rootSeq(); got != 2 {
		t.Fatalf("new device: root %d, want 2", got)
	}
	if s := be.snap().since(before); s.lists != 1 {
		t.Fatalf("new device: %d LISTs of roots, want 1", s.lists)
	}
}

// The requests of a command's root lookup do not grow with the retained roots.
func TestRootLookupConstantWithManyRoots(t *testing.T) {
	be, dev := probeDevices(t)
	d := dev()
	c := d.client() // one long-lived client, as 'veil bench' holds it
	src := t.TempDir()
	lookup := func() snap {
		before := be.snap()
		d.rootSeq()
		return be.snap().since(before)
	}
	var at10 snap
	for i := 1; i <= 200; i++ {
		p := filepath.Join(src, "f"+itoa(i))
		write(t, p, randBytes(64, uint64(i)))
		if _, err := c.Put(context.Background(), []string{p}, ""); err != nil {
			t.Fatal(err)
		}
		if i == 10 {
			at10 = lookup()
		}
	}
	at200 := lookup()
	if got := d.rootSeq(); got != 200 {
		t.Fatalf("root %d, want 200", got)
	}
	if at10 != at200 || at200.lists != 0 {
		t.Fatalf("root lookup at 10 roots %+v, at 200 roots %+v: want equal, without LIST", at10, at200)
	}
}

// Roots another device published are found: a few by reading forward, many by listing.
func TestRootProbeFindsOtherDevicesRoots(t *testing.T) {
	be, dev := probeDevices(t)
	a, b := dev(), dev()
	a.put("a", 1)
	b.rootSeq() // b knows the namespace
	for _, newer := range []int{3, rootProbeSteps + 4} {
		want := a.rootSeq() + uint64(newer)
		for i := 0; i < newer; i++ {
			b.put("b"+itoa(i), uint64(100*newer+i))
		}
		before := be.snap()
		if got := a.rootSeq(); got != want {
			t.Fatalf("%d newer roots of another device: a sees root %d, want %d", newer, got, want)
		}
		s := be.snap().since(before)
		// n+1 .. n+newer, the absent one after them, and n (read alongside n+1 in case it
		// is the newest).
		if newer < rootProbeSteps && (s.lists != 0 || s.gets != int64(newer)+2) {
			t.Fatalf("%d newer roots: %d LISTs, %d GETs, want 0 and %d", newer, s.lists, s.gets, newer+2)
		}
		if newer > rootProbeSteps && s.lists != 1 {
			t.Fatalf("%d newer roots: %d LISTs, want 1 (probing stops after %d)", newer, s.lists, rootProbeSteps)
		}
		// a's next put builds on the newest root.
		a.put("a"+itoa(newer), uint64(newer))
		if got := b.rootSeq(); got != want+1 {
			t.Fatalf("after a's put b sees root %d, want %d", got, want+1)
		}
	}
}

// A remembered root that forget dropped makes the lookup list the roots.
func TestRootProbeForgottenRootLists(t *testing.T) {
	be, dev := probeDevices(t)
	a, b := dev(), dev()
	a.put("a", 1)
	for i := 0; i < 3; i++ {
		b.put("b"+itoa(i), uint64(10+i))
	}
	if _, err := b.client().Forget(context.Background(), Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	before := be.snap()
	if got := a.rootSeq(); got != 4 {
		t.Fatalf("a sees root %d, want 4", got)
	}
	if s := be.snap().since(before); s.lists != 1 {
		t.Fatalf("remembered root forgotten: %d LISTs, want 1", s.lists)
	}
}

// Where forget drops the successor of a kept root that is not the newest, it leaves a gap
// mark, so a device remembering the kept root still finds the newest. Every root it drops
// becomes a mark too (a lock-free put that read it must not find its successor free); a
// forget at least markGrace later deletes the marks no kept root needs.
func TestRootProbeGapMark(t *testing.T) {
	be, dev := probeDevices(t)
	a, b := dev(), dev()
	a.put("a", 1) // root 1, a remembers it
	for i := 0; i < 3; i++ {
		b.put("b"+itoa(i), uint64(10+i)) // roots 2, 3, 4
	}
	ctx := context.Background()
	c := b.client()
	forget := func(age time.Duration, keep ...bool) { // as if the marks were age older
		t.Helper()
		written, err := c.rootListing(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for s, w := range written {
			written[s] = w.Add(-age)
		}
		roots, err := c.loadRoots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		snaps := make([]Snapshot, len(roots))
		for i, r := range roots {
			snaps[i] = snapshotOf(r)
		}
		if err := c.dropRoots(ctx, written, snaps, keep); err != nil {
			t.Fatal(err)
		}
	}
	forget(0, true, false, false, true) // keeps 1 and 4: 2 and 3 become marks
	numbers := func() []uint64 {
		n, err := c.rootNumbers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := numbers(); !slices.Equal(n, []uint64{1, 2, 3, 4}) {
		t.Fatalf("after forget: numbers %v, want [1 2 3 4] (2 and 3 gap marks)", n)
	}
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Seq != 1 || snaps[1].Seq != 4 {
		t.Fatalf("snapshots %+v, want 1 and 4", snaps)
	}
	if _, err := c.PinSnapshot(ctx, 2); err == nil {
		t.Fatal("pinned a gap mark")
	}
	before := be.snap()
	if got := a.rootSeq(); got != 4 {
		t.Fatalf("a, remembering kept root 1, sees root %d, want 4", got)
	}
	if s := be.snap().since(before); s.lists != 1 {
		t.Fatalf("gap mark met: %d LISTs, want 1", s.lists)
	}
	a.put("a2", 2) // root 5 on root 4
	if got := b.rootSeq(); got != 5 {
		t.Fatalf("b sees root %d, want 5", got)
	}
	forget(0, false, true, true) // drops 1, a mark now; the marks 2 and 3 are too young to go
	if n := numbers(); !slices.Equal(n, []uint64{1, 2, 3, 4, 5}) {
		t.Fatalf("after the second forget: numbers %v, want [1 2 3 4 5]", n)
	}
	forget(markGrace+time.Minute, true, true) // a day later: marks no kept root needs go
	if n := numbers(); !slices.Equal(n, []uint64{4, 5}) {
		t.Fatalf("after a forget a day later: numbers %v, want [4 5]", n)
	}
	// A gap left by an older veil's forget (no mark) is marked by the next forget.
	b.put("b3", 20) // root 6
	b.put("b4", 21) // root 7
	if err := be.Delete(ctx, rootsDir, rootName(6)); err != nil {
		t.Fatal(err)
	}
	forget(0, true, true, true) // keeps 4, 5 and 7
	if n := numbers(); len(n) != 4 || n[2] != 6 {
		t.Fatalf("after a forget over an unmarked gap: numbers %v, want [4 5 6 7]", n)
	}
	if got := a.rootSeq(); got != 7 {
		t.Fatalf("a, remembering root 5, sees root %d, want 7", got)
	}
}

// A gap mark the service plants under the newest number is an integrity error, for a
// device that remembers that root and for a new one.
func TestRootPlantedMarkOnNewest(t *testing.T) {
	be, dev := probeDevices(t)
	a := dev()
	a.put("a", 1)
	if err := be.Put(context.Background(), rootsDir, rootName(1), bytesReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*probeDevice{"remembering": a, "new": dev()} {
		if _, err := d.client().Root(context.Background()); !errors.Is(err, ErrIntegrity) {
			t.Fatalf("%s device: %v, want an integrity error", name, err)
		}
	}
}
