package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Review of the tree root copy (session 16, rootcopy.go): each test plays an attack on
// "a lone put builds on the device's copy of root n as safely as on a read of it".

// matchGateBE is gateBE that also takes match conditions (storage.MatchBatcher), as the
// storage service does from batch version 4: only there does a lone put build on the
// device's root copy (copyMatch).
// gets, if set, counts the client's reads of roots and tree bases (not the fake service's
// own, of the roots its match conditions name).
type matchGateBE struct {
	*gateBE
	gets *atomic.Int64
}

func (matchGateBE) BatchMatches() {}

func (b matchGateBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if (dir == rootsDir || dir == basesDir) && b.gets != nil { // a tree base is part of its root
		b.gets.Add(1)
	}
	return b.gateBE.Get(ctx, dir, name)
}

// copyRig is a namespace on a counting service with device a, whose tree root copy is in
// use (two lone puts made), and a helper that puts a new file through a client.
type copyRig struct {
	raw    storage.Backend
	gets   *atomic.Int64
	be     *gateBE
	device func() func() *Client
	a      func() *Client
	dir    string
	seed   uint64
}

func newCopyRig(t *testing.T) *copyRig {
	t.Helper()
	if !deviceNow().ok {
		t.Skip("no boot clock here")
	}
	raw := newBackend(t)
	g := &copyRig{raw: raw, gets: &atomic.Int64{}, be: &gateBE{absentBE: absentBE{&condBE{Backend: raw}}}, dir: t.TempDir(), seed: 500}
	g.device = profileDevices(t, matchGateBE{g.be, g.gets}, true)
	g.a = g.device()
	g.put(t, g.a(), "first")  // under the lock (a new namespace)
	g.put(t, g.a(), "second") // lone: reads root 1, keeps a copy
	if n := g.rootGets(t, g.a(), "third"); n != 0 {
		t.Fatalf("setup: the lone put on the copy read %d roots", n)
	}
	return g
}

func (g *copyRig) put(t *testing.T, c *Client, name string) {
	t.Helper()
	g.seed++
	write(t, filepath.Join(g.dir, name), randBytes(4096, g.seed))
	if _, err := c.Put(ctx, []string{filepath.Join(g.dir, name)}, ""); err != nil {
		t.Fatalf("put %s: %v", name, err)
	}
}

// rootGets puts name through c and returns how many roots it read.
func (g *copyRig) rootGets(t *testing.T, c *Client, name string) int64 {
	t.Helper()
	n := g.gets.Load()
	g.put(t, c, name)
	return g.gets.Load() - n
}

// checkAll reads every named file back through a new device.
func (g *copyRig) checkAll(t *testing.T, names ...string) {
	t.Helper()
	c := g.device()()
	for _, name := range names {
		sameFile(t, c, filepath.Join(g.dir, name), name)
	}
}

// Two veil processes of one device put at once, both on the device's copy of root n (one
// profile: the same root memory and copy). Both batches create n+1: one is refused and
// its put goes under the lock; both files are stored, and the device's memory and copy
// end consistent (the next lone put builds on the copy or reads, never on a root that is
// not the newest). Sound: the create of n+1 is the arbiter, as with two reads.
func TestRootCopyTwoProcessesPut(t *testing.T) {
	g := newCopyRig(t)
	var arrived atomic.Int64
	both := make(chan struct{})
	g.be.onBatch = func(objs []storage.Object) {
		if !isLockless(objs) {
			return
		}
		if arrived.Add(1) == 2 {
			close(both)
		}
		select { // both lock-free batches in flight together (or the other took the lock)
		case <-both:
		case <-time.After(2 * time.Second):
		}
	}
	gets := g.gets.Load()
	lost := g.be.lost.Load()
	var wg sync.WaitGroup
	for _, name := range []string{"p", "q"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.put(t, g.a(), name)
		}()
	}
	wg.Wait()
	g.be.onBatch = nil
	if arrived.Load() != 2 {
		t.Fatalf("%d lock-free batches, want 2 (both processes on the copy)", arrived.Load())
	}
	if n := g.be.lost.Load() - lost; n != 1 {
		t.Fatalf("%d refused creates, want 1", n)
	}
	if n := g.gets.Load() - gets; n == 0 {
		t.Fatal("the refused put read no root under the lock")
	}
	g.put(t, g.a(), "after")
	g.checkAll(t, "first", "second", "third", "p", "q", "after")
}

// A crash between a lone put's batch and its writes of the root memory and the copy: the
// device remembers root n and holds its copy while n+1 (the crashed put's, acknowledged
// to no one but stored) is the newest. The next lone put builds on the copy of n: its
// create of n+1 is refused and it goes under the lock, keeping the crashed put's file. A
// crash after the copy's write but before the memory's leaves a copy the memory does not
// name: not used.
func TestRootCopyCrashBeforeCopyOrMemory(t *testing.T) {
	for _, copyWritten := range []bool{false, true} {
		t.Run(fmt.Sprintf("copy written %v", copyWritten), func(t *testing.T) {
			g := newCopyRig(t)
			c := g.a()
			memPath := filepath.Join(filepath.Dir(filepath.Dir(c.opts.Cache.Path)), "root.mem")
			copyPath := rootCopyPath(c.opts.Cache)
			mem, err := os.ReadFile(memPath)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := os.ReadFile(copyPath)
			if err != nil {
				t.Fatal(err)
			}
			g.put(t, c, "crashed") // lone, on the copy: root n+1
			os.WriteFile(memPath, mem, 0o600)
			if !copyWritten {
				os.WriteFile(copyPath, cp, 0o600)
			}
			if _, _, _, used := g.a().rootFromCopy(ctx); used == copyWritten {
				t.Fatalf("copy of root n+1 beside the memory of n used: %v, want %v", used, !copyWritten)
			}
			lost := g.be.lost.Load()
			g.put(t, g.a(), "next")
			if refused := g.be.lost.Load() - lost; refused != 1 {
				t.Fatalf("root n remembered with n+1 stored: %d refused creates, want 1", refused)
			}
			g.checkAll(t, "first", "second", "third", "crashed", "next")
		})
	}
}

// A profile directory copied on the same machine (same boot) carries the root memory and
// the copy: the second profile's lone put builds on it (the moment is true: root n was
// stored then), and whichever of the two puts second finds n+1 taken and goes under the
// lock. Sound.
func TestRootCopyCopiedProfile(t *testing.T) {
	g := newCopyRig(t)
	src := g.a()
	dirA := filepath.Dir(filepath.Dir(src.opts.Cache.Path))
	b := g.device()
	dst := b()
	dirB := filepath.Dir(filepath.Dir(dst.opts.Cache.Path))
	for _, p := range []string{"root.mem", filepath.Join("cache", "x.root")} {
		data, err := os.ReadFile(filepath.Join(dirA, p))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dirB, p)), 0o700)
		if err := os.WriteFile(filepath.Join(dirB, p), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := g.rootGets(t, b(), "from-b"); n != 0 {
		t.Fatalf("the copied profile's lone put read %d roots, want 0 (the copy)", n)
	}
	lost := g.be.lost.Load()
	g.put(t, g.a(), "from-a") // a's copy is of the root before b's
	if n := g.be.lost.Load() - lost; n != 1 {
		t.Fatalf("%d refused creates, want 1", n)
	}
	g.checkAll(t, "first", "second", "third", "from-b", "from-a")
}

// A copy another master key made (a profile of another namespace whose files were put in
// place of this one's, with the root memory that names it): it does not open under this
// key and is not used; the put reads the storage and reports the memory's root as not
// the newest (the memory is what names a root, and the copy never overrides it).
func TestRootCopyOfAnotherKey(t *testing.T) {
	g := newCopyRig(t)
	other := newCopyRig(t) // its own namespace and key
	dirA := filepath.Dir(filepath.Dir(g.a().opts.Cache.Path))
	dirO := filepath.Dir(filepath.Dir(other.a().opts.Cache.Path))
	for _, p := range []string{"root.mem", filepath.Join("cache", "x.root")} {
		data, err := os.ReadFile(filepath.Join(dirO, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirA, p), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := g.a()
	if _, _, _, ok := c.rootFromCopy(ctx); ok {
		t.Fatal("a copy of another key's root was used")
	}
	writes := g.be.absents.Load()
	g.seed++
	write(t, filepath.Join(g.dir, "x"), randBytes(4096, g.seed))
	_, err := c.Put(ctx, []string{filepath.Join(g.dir, "x")}, "")
	if err == nil {
		t.Fatal("a put whose memory names another namespace's root succeeded")
	}
	if n := g.be.absents.Load() - writes; n != 0 {
		t.Fatalf("%d lock-free batches sent on another key's copy", n)
	}
	g.checkAll(t, "first", "second", "third")
}

// 'veil root accept' moves the memory back to an older root (the service restored from a
// backup lost root n, the one the device's copy holds): the copy is not used, the put
// reads the storage and builds on the accepted root.
func TestRootCopyAfterRootAccept(t *testing.T) {
	g := newCopyRig(t)
	n, _, _, err := g.a().mem.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.raw.Delete(ctx, rootsDir, rootName(n)); err != nil { // the restore
		t.Fatal(err)
	}
	if _, err := g.a().AcceptRoot(ctx); err != nil {
		t.Fatal(err)
	}
	if gets := g.rootGets(t, g.a(), "after-accept"); gets == 0 {
		t.Fatal("the lone put after root accept built on the copy of the root the service lost")
	}
	g.checkAll(t, "first", "second", "after-accept")
}

// The wall clock set back by a minute after the copy was kept: the copy's moment is in
// the future by it, so its age is not known and the copy is not used (the boot clock
// alone would accept it; the wall clock alone would make it younger).
func TestRootCopyWallClockSetBack(t *testing.T) {
	g := newCopyRig(t)
	shiftDeviceClock(t, -time.Minute, 0)
	if gets := g.rootGets(t, g.a(), "set-back"); gets == 0 {
		t.Fatal("a copy kept a minute in the future by the wall clock was used")
	}
	g.checkAll(t, "first", "second", "third", "set-back")
}

// A lone put on a copy whose batch a service older than batch version 3 refuses: put
// under the lock, once per command (as on a read), and nothing of the copy is reused
// there: the put under the lock reads the root (probing) and stores the file.
func TestRootCopyOlderService(t *testing.T) {
	g := newCopyRig(t)
	g.be.refuseAbsent = true
	for _, name := range []string{"old-1", "old-2"} {
		tried := g.be.absents.Load()
		if gets := g.rootGets(t, g.a(), name); gets == 0 {
			t.Fatalf("%s: the put under the lock read no root", name)
		}
		if n := g.be.absents.Load() - tried; n != 1 {
			t.Fatalf("%s: %d lock-free batches, want 1 per command", name, n)
		}
	}
	g.be.refuseAbsent = false
	g.checkAll(t, "first", "second", "third", "old-1", "old-2")
}

// The service rolled back (restored from a backup, or failed over to a replica behind it)
// losing root n, this device's last; another device has since put a file, as root n
// again. This device's next lone put, within the copy's 5 minutes, must not build on its
// copy of the lost n: its create of n+1 succeeded and the newest root dropped the other
// device's file (found by review). Nor may a put of an unchanged file report it stored:
// the newest root does not list it. Both now go under the lock, which reads the roots and
// reports the rollback (copyMatch, copyStillStored), as the read of root n did.
func TestRootCopyServiceRolledBack(t *testing.T) {
	for _, changed := range []bool{true, false} {
		t.Run(fmt.Sprintf("changed %v", changed), func(t *testing.T) {
			g := newCopyRig(t)
			n, _, _, err := g.a().mem.Load()
			if err != nil {
				t.Fatal(err)
			}
			if err := g.raw.Delete(ctx, rootsDir, rootName(n)); err != nil { // the rollback
				t.Fatal(err)
			}
			g.put(t, g.device()(), "other") // a new device: root n again, its own
			name := "third"                 // a's, in the lost root n: unchanged
			if changed {
				name = "mine"
				g.seed++
				write(t, filepath.Join(g.dir, name), randBytes(4096, g.seed))
			}
			if _, err = g.a().Put(ctx, []string{filepath.Join(g.dir, name)}, ""); !errors.Is(err, ErrRollback) {
				t.Fatalf("put of %s on the rolled back service: %v, want %v", name, err, ErrRollback)
			}
			g.checkAll(t, "first", "second", "other")
		})
	}
}

// A machine paused by its hypervisor for days (its wall and boot clocks both stopped, so
// its root copy still looks fresh): meanwhile another device published n+1 and n+2, and
// forgot n and n+1, whose gap marks a forget a day later deleted (markGrace). n+1 is free
// again with n+2 above it: the create of n+1 alone would succeed and the newest root, n+2,
// would not list this device's file (acknowledged, then lost). The batch requires root n
// to be the copy's bytes (copyMatch): refused, under the lock, stored.
func TestRootCopyClocksFrozen(t *testing.T) {
	g := newCopyRig(t)
	n, _, _, err := g.a().mem.Load()
	if err != nil {
		t.Fatal(err)
	}
	b := g.device()
	g.put(t, b(), "b1")
	g.put(t, b(), "b2")
	if _, err := b().Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []uint64{n, n + 1} { // the marks, deleted by a forget a day later
		if err := g.raw.Delete(ctx, rootsDir, rootName(s)); err != nil {
			t.Fatal(err)
		}
	}
	g.put(t, g.a(), "paused")
	g.checkAll(t, "first", "second", "third", "b1", "b2", "paused")
}

// The storage location wiped and claimed by another master key (a second 'veil init')
// within the copy's 5 minutes: the copy proves this key's ownership of nothing stored now.
// The batch requires root n to be the copy's bytes (copyMatch): refused, and the put
// under the lock reads the key check (ErrForeignKey). Without it the batch created this
// key's root n+1 in the other key's namespace, whose next reader met a root that does not
// open.
func TestRootCopyLocationClaimedByAnotherKey(t *testing.T) {
	g := newCopyRig(t)
	wipe(t, g.raw, "")
	intruder := profileDevices(t, matchGateBE{g.be, nil}, true)()
	g.put(t, intruder(), "theirs")
	g.seed++
	write(t, filepath.Join(g.dir, "mine"), randBytes(4096, g.seed))
	for _, name := range []string{"third", "mine"} { // unchanged, new
		if _, err := g.a().Put(ctx, []string{filepath.Join(g.dir, name)}, ""); !errors.Is(err, ErrForeignKey) {
			t.Fatalf("lone put of %s on the copy into another key's namespace: %v, want %v", name, err, ErrForeignKey)
		}
	}
	sameFile(t, intruder(), filepath.Join(g.dir, "theirs"), "theirs")
}

// wipe deletes everything under dir of be.
func wipe(t *testing.T, be storage.Backend, dir string) {
	t.Helper()
	infos, err := be.List(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.IsDir {
			wipe(t, be, storage.Join(dir, i.Name))
			continue
		}
		if err := be.Delete(ctx, dir, i.Name); err != nil {
			t.Fatal(err)
		}
	}
}

// Another process of the device (a mount following new roots, any reading command) moves
// the root memory past the copy: the copy is not used, and the lone put builds on the
// root it reads, with no refused batch.
func TestRootCopyMemoryMovedOn(t *testing.T) {
	g := newCopyRig(t)
	g.put(t, g.device()(), "other")
	if _, err := g.a().List(ctx, "", false); err != nil { // reads the newest root, remembers it
		t.Fatal(err)
	}
	lost := g.be.lost.Load()
	if gets := g.rootGets(t, g.a(), "after"); gets == 0 {
		t.Fatal("the lone put built on a copy the root memory has moved past")
	}
	if n := g.be.lost.Load() - lost; n != 0 {
		t.Fatalf("%d refused creates, want 0", n)
	}
	g.checkAll(t, "first", "second", "third", "other", "after")
}

// Version 2 roots (a tree base and a delta): the copy holds the small root, its base is
// the device's base copy on disk; a lone put on them reads neither root nor base. Another
// device's root since (a new checkpoint base, the old roots forgotten and the old base
// pruned) refuses the batch on the stale copy, and the put under the lock stores the file.
func TestRootCopyOfVersion2Root(t *testing.T) {
	if !deviceNow().ok {
		t.Skip("no boot clock here")
	}
	rootForms(t, 8<<10, 1<<10)
	raw := newBackend(t)
	gets := &atomic.Int64{}
	be := &gateBE{absentBE: absentBE{&condBE{Backend: raw}}}
	device := profileDevices(t, matchGateBE{be, gets}, true)
	a, b := device(), device()
	if _, err := a().Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	seed := uint64(900)
	put := func(c *Client, name string) int64 {
		t.Helper()
		seed++
		write(t, filepath.Join(dir, name), randBytes(2048, seed))
		n := gets.Load()
		if _, err := c.Put(ctx, []string{filepath.Join(dir, name)}, "tree/d1"); err != nil {
			t.Fatal(err)
		}
		return gets.Load() - n
	}
	put(a(), "read") // reads root n (its base from disk), keeps the copy
	c := a()
	r, _, _, ok := c.rootFromCopy(ctx)
	if !ok || r.base == nil {
		t.Fatalf("no copy of a version 2 root: used %v", ok)
	}
	if n := put(a(), "on-copy"); n != 0 {
		t.Fatalf("lone put on the copy of a version 2 root read %d roots and bases, want 0", n)
	}
	for i := range 16 { // past rootDeltaMax: a new checkpoint base
		put(b(), fmt.Sprint("b", i))
	}
	if _, err := b().Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b().Prune(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Stat(ctx, basesDir, baseName(r.base.id)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the copy's base after forget and prune: %v, want it pruned", err)
	}
	lost := be.lost.Load()
	put(a(), "stale")
	if n := be.lost.Load() - lost; n != 1 {
		t.Fatalf("%d refused batches on the stale copy, want 1", n)
	}
	d := device()()
	for _, name := range []string{"read", "on-copy", "b0", "b15", "stale"} {
		sameFile(t, d, filepath.Join(dir, name), "tree/d1/"+name)
	}
}
