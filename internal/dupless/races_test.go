package dupless

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// rm deletes its .veil/pruning mark before it releases its exclusive lock, never after: a
// prune that took the lock in between would have written its own mark, which rm would
// then delete, and a lock-free put could commit while prune deletes the chunk it reuses.
// Found by review of lockRemoving (it released first); this fails with that order.
func TestRemoveKeepsPrunesMark(t *testing.T) {
	be, dev := newGateBE(t)
	owner, dir, content := unreferencedChunk(t, dev)
	x := filepath.Join(dir, "x")
	write(t, x, []byte("x"))
	if _, err := owner.Put(ctx, []string{x}, ""); err != nil {
		t.Fatal(err)
	}
	planned, resume := make(chan struct{}), make(chan struct{})
	pruned, early := make(chan error, 1), make(chan error, 1)
	var rmUnmark, chunkDel atomic.Bool
	be.onDelete = func(d, n string) {
		switch {
		case d == veilDir && n == pruneMark && rmUnmark.CompareAndSwap(false, true):
			// rm has released its lock and is about to delete the mark: a prune starts.
			go func() { _, err := dev().Prune(ctx, 0, false); pruned <- err }()
			select {
			case <-planned:
			case err := <-pruned:
				early <- err
			}
		case strings.HasPrefix(d, chunkRoot+"/") && chunkDel.CompareAndSwap(false, true):
			close(planned)
			<-resume
		}
	}
	if _, err := dev().Remove(ctx, "x", false); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-early: // rm still held its lock: prune refused, no race possible
		if !errors.Is(err, ErrLocked) {
			t.Fatal(err)
		}
		return
	default:
	}
	if !chunkDel.Load() {
		t.Fatal("race not run")
	}
	again := filepath.Join(dir, "again")
	write(t, again, content) // chunk W again
	putter := dev()
	_, perr := putter.Put(ctx, []string{again}, "")
	close(resume)
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	be.onDelete = nil
	if perr != nil {
		t.Logf("put refused: %v", perr)
		if _, err := putter.Put(ctx, []string{again}, ""); err != nil {
			t.Fatal(err)
		}
	}
	sameFile(t, dev(), again, "again")
}

// agedBE shows the entries of .veil/roots as if written age ago (a day has passed).
type agedBE struct {
	*gateBE
	age atomic.Int64
}

func (b *agedBE) List(ctx context.Context, dir string) ([]storage.Info, error) {
	infos, err := b.gateBE.List(ctx, dir)
	if dir == rootsDir {
		for i := range infos {
			infos[i].ModTime = infos[i].ModTime.Add(-time.Duration(b.age.Load()))
		}
	}
	return infos, err
}

// A gap mark written more than markGrace ago that a kept root needed (n+1 after a kept n)
// must not be deleted by the very forget that drops n: a lock-free put that read n a
// moment ago would find n+1 free although n is not the newest. Found by review (marks
// went by their own age alone); forgetmarks.go now also waits out the predecessor's.
func TestOldGapMarkKeptUnderLocklessPut(t *testing.T) {
	gbe := &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}
	be := &agedBE{gateBE: gbe}
	device := memDevices(t, be)
	a, b, fa := staleByThree(t, device)
	// A forget keeping 1, 2 and 5: 3 (needed by 2) and 4 become marks.
	c := b()
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	written, err := c.rootListing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	roots, err := c.loadRoots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snaps := make([]Snapshot, len(roots))
	for i, r := range roots {
		snaps[i] = snapshotOf(r)
	}
	if err := c.dropRoots(ctx, written, snaps, []bool{true, true, false, false, true}); err != nil {
		t.Fatal(err)
	}
	be.age.Store(int64(markGrace + time.Hour)) // a day later
	putRacingForget(t, gbe, device, a, b, fa)
}

// hostileBE answers a GET of one record path with bytes it kept (an older version).
type hostileBE struct {
	*hookBE
	mu       sync.Mutex
	dir, obj string
	old      []byte
	on       bool
}

func (b *hostileBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	b.mu.Lock()
	on, old := b.on && d == b.dir && n == b.obj, b.old
	b.mu.Unlock()
	if on {
		return io.NopCloser(bytes.NewReader(old)), nil
	}
	return b.hookBE.Get(ctx, d, n)
}

// resolveConflicts never lists a record only the service vouches for: when two puts of one
// file race and the service replays an older version of it at the path, the newest root
// must not list that version (a silent rollback readers could not detect). Found by
// review: it listed whatever record the service returned, once it opened.
func TestResolveConflictsRefusesReplay(t *testing.T) {
	hb := &hookBE{Backend: newBackend(t)}
	be := &hostileBE{hookBE: hb}
	dev := devices(t, be)
	old := filepath.Join(t.TempDir(), "f")
	write(t, old, randBytes(40<<10, 90))
	var recDir, recName string
	hb.afterPut = func(d, name string) {
		if strings.HasSuffix(name, keySuffix) && !strings.HasPrefix(d, veilDir) {
			recDir, recName = d, name
		}
	}
	if _, err := dev().Put(ctx, []string{old}, ""); err != nil {
		t.Fatal(err)
	}
	hb.afterPut = nil
	rc, err := hb.Backend.Get(ctx, recDir, recName)
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := io.ReadAll(rc)
	rc.Close()
	be.dir, be.obj, be.old = recDir, recName, v1

	fa, fb := filepath.Join(t.TempDir(), "f"), filepath.Join(t.TempDir(), "f")
	write(t, fa, randBytes(40<<10, 91))
	write(t, fb, randBytes(40<<10, 92))
	var once atomic.Bool
	var bErr error
	hb.afterPut = func(d, name string) { // a has written its record; b writes and publishes
		if strings.HasSuffix(name, keySuffix) && !strings.HasPrefix(d, veilDir) && once.CompareAndSwap(false, true) {
			_, bErr = dev().Put(ctx, []string{fb}, "")
			be.mu.Lock()
			be.on = true // from now on the service replays v1 at f
			be.mu.Unlock()
		}
	}
	if _, err := dev().Put(ctx, []string{fa}, ""); err != nil {
		t.Fatal(err)
	}
	hb.afterPut = nil
	be.mu.Lock()
	be.on = false
	be.mu.Unlock()
	if !once.Load() || bErr != nil {
		t.Fatalf("the race was not run (b's put: %v)", bErr)
	}
	c := dev()
	if err := c.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if h := c.view.root.Entries[storage.Join(recDir, recName)]; h == sha256.Sum256(v1) {
		t.Fatal("the newest root lists the old version the service replayed (rollback)")
	}
}
