package dupless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// afterRecord runs after once, after the first batch holding a record of a file is
// stored (hookMatchBE, hookLocalBE).
type afterRecord struct {
	after func()
	once  atomic.Bool
}

func (h *afterRecord) stored(objs []storage.Object) {
	for _, o := range objs {
		if strings.HasSuffix(o.Name, keySuffix) && !strings.HasPrefix(o.Dir, veilDir) && h.after != nil && h.once.CompareAndSwap(false, true) {
			h.after()
			return
		}
	}
}

// hookMatchBE is matchBE with afterRecord.
type hookMatchBE struct {
	matchBE
	afterRecord
}

func (b *hookMatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := b.matchBE.PutBatch(ctx, objs); err != nil {
		return err
	}
	b.stored(objs)
	return nil
}

// racePutsOfOneFolder puts two trees into one folder from two devices at once on be
// (whose h runs B's put after A's first record) and checks that every snapshot restores.
func racePutsOfOneFolder(t *testing.T, be storage.Backend, h *afterRecord) {
	t.Helper()
	dev := seededDevices(t, be)
	srcA := writeTree(t, t.TempDir(), 12, 3000, 100)
	srcB := writeTree(t, t.TempDir(), 12, 3000, 200)
	var bErr error
	h.after = func() { _, bErr = dev().Put(ctx, []string{srcB}, "") }
	a := dev()
	a.opts.Jobs = 1 // its records go one by one: B's put lands between two of them
	if _, err := a.Put(ctx, []string{srcA}, ""); err != nil {
		t.Fatal(err)
	}
	if !h.once.Load() || bErr != nil {
		t.Fatalf("the race was not run (b's put: %v)", bErr)
	}
	everySnapshotRestores(t, dev(), srcA, srcB)
}

// writeTree writes n files of size bytes under dir/race, from seed.
func writeTree(t *testing.T, dir string, n, size int, seed uint64) string {
	t.Helper()
	root := filepath.Join(dir, "race")
	for i := range n {
		write(t, filepath.Join(root, fmt.Sprintf("f%02d", i)), randBytes(size, seed+uint64(i)))
	}
	return root
}

// everySnapshotRestores gets folder race from every snapshot and checks each file is the
// content of one of srcs (the same name), and returns how many files came from each.
func everySnapshotRestores(t *testing.T, c *Client, srcs ...string) {
	t.Helper()
	snaps, err := c.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		if _, err := c.PinSnapshot(ctx, s.Seq); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "out")
		sum, err := c.Get(ctx, "race", out)
		if errors.Is(err, storage.ErrNotFound) {
			continue // before the folder was stored
		}
		if err == nil {
			err = sum.Err()
		}
		if err != nil {
			t.Fatalf("snapshot %d: %v", s.Seq, err)
		}
		ents, _ := os.ReadDir(out)
		for _, e := range ents {
			got, _ := os.ReadFile(filepath.Join(out, e.Name()))
			found := false
			for _, src := range srcs {
				want, _ := os.ReadFile(filepath.Join(src, e.Name()))
				found = found || bytes.Equal(got, want)
			}
			if !found {
				t.Fatalf("snapshot %d: race/%s is neither put's content", s.Seq, e.Name())
			}
		}
	}
}

// Two puts of one folder at once (two devices): the second runs whole between the first
// one's first record write and its publish. Found by a user walkthrough: both reported
// success, and the snapshot of the one whose records the other replaced could not
// restore them ("this version is not kept"). Now every snapshot restores every file, and
// the newest holds the later write of each.
func TestPutsOfOneFolderEverySnapshotRestores(t *testing.T) {
	be := &hookMatchBE{matchBE: matchBE{absentBE{&condBE{Backend: newBackend(t)}}}}
	racePutsOfOneFolder(t, be, &be.afterRecord)
	if be.lost.Load() == 0 {
		t.Fatal("no record write lost a race: the test did not interleave the puts")
	}
}

// The put whose records the other replaced never publishes (killed): the first put's
// snapshot, the newest, still restores its files, from the versions the other kept before
// writing over them. Before: its files were lost although acknowledged.
func TestPutOverwrittenByDeadPutKeepsFiles(t *testing.T) {
	dev, srcA := deadOverwrite(t)
	c := dev()
	out := filepath.Join(t.TempDir(), "out")
	sum, err := c.Get(ctx, "race", out)
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatalf("the newest snapshot after a dead put wrote over its records: %v", err)
	}
	for i := range 6 {
		name := fmt.Sprintf("f%02d", i)
		got, _ := os.ReadFile(filepath.Join(out, name))
		want, _ := os.ReadFile(filepath.Join(srcA, name))
		if !bytes.Equal(got, want) {
			t.Fatalf("race/%s is not a's content: the acknowledged put lost it", name)
		}
	}
}

// noRootBE is a storage that takes everything but tree roots: a command on it writes its
// records and dies before publishing.
type noRootBE struct{ storage.Backend }

func (b *noRootBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	for _, o := range objs {
		if o.Dir == rootsDir {
			return fmt.Errorf("test: the command died before publishing: %w", storage.ErrPermission)
		}
	}
	return storage.PutAll(ctx, b.Backend, objs)
}

func (b *noRootBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if dir == rootsDir || strings.HasPrefix(dir, ".veil/tmp") {
		return fmt.Errorf("test: the command died before publishing: %w", storage.ErrPermission)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

func (b *noRootBE) BatchCreates() {}
func (b *noRootBE) BatchAbsents() {}
func (b *noRootBE) BatchMatches() {}
func (b *noRootBE) BatchLarge()   {}

// cutOffBE commits a record's batch and then answers as a request cut off by its
// caller's cancelled context would: stored, but the caller told it failed. The first
// record batch cancels the command (Ctrl-C) just before it is sent.
type cutOffBE struct {
	*condBE
	cancel context.CancelFunc
	once   atomic.Bool
}

func (b *cutOffBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	record := false
	for _, o := range objs {
		record = record || strings.HasSuffix(o.Name, keySuffix) && !strings.HasPrefix(o.Dir, veilDir)
	}
	if record && b.cancel != nil && b.once.CompareAndSwap(false, true) {
		b.cancel()
	}
	err := b.condBE.PutBatch(context.WithoutCancel(ctx), objs)
	if err == nil && ctx.Err() != nil {
		return ctx.Err() // committed; the answer never reached the caller
	}
	return err
}

// Ctrl-C during a put: a record write in flight was cut off, yet the service committed
// it; the command's root did not list it, and until the put ran again 'ls' and 'check'
// reported the file as rolled back or damaged (found by a user walkthrough). A record
// write, once started, is now finished despite the interrupt.
func TestInterruptedPutListsRecordsInFlight(t *testing.T) {
	be := &cutOffBE{condBE: &condBE{Backend: newBackend(t)}}
	dev := seededDevices(t, be)
	src := writeTree(t, t.TempDir(), 8, 3000, 500)
	cctx, cancel := context.WithCancel(ctx)
	be.cancel = cancel
	c := dev()
	c.opts.Jobs = 1
	c.Put(cctx, []string{src}, "") // interrupted
	if !be.once.Load() {
		t.Fatal("no record batch was sent")
	}
	res, err := dev().Check(ctx, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("after an interrupted put: %d problems, first: %v", len(res.Problems), res.Problems[0])
	}
}

// lostAnswerBE commits the first record batch and then answers it with a dropped
// connection, as a store node killed right after committing does.
type lostAnswerBE struct {
	*condBE
	once atomic.Bool
}

func (b *lostAnswerBE) BatchMatches() {}
func (b *lostAnswerBE) BatchAbsents() {}

func (b *lostAnswerBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	err := b.condBE.PutBatch(ctx, objs)
	for _, o := range objs {
		if err == nil && strings.HasSuffix(o.Name, keySuffix) && !strings.HasPrefix(o.Dir, veilDir) && b.once.CompareAndSwap(false, true) {
			return fmt.Errorf("put batch: %w", syscall.ECONNRESET)
		}
	}
	return err
}

// A record write whose answer was lost after the service committed it is tried again;
// the retry finds its own record stored and keeps no copy of it as "another command's"
// (the multi-node test's SIGKILL left such copies: physical bytes above one node's).
func TestRetriedRecordWriteKeepsNoCopyOfItself(t *testing.T) {
	fastRetries(t)
	be := &lostAnswerBE{condBE: &condBE{Backend: newBackend(t)}}
	dev := seededDevices(t, be)
	src := writeTree(t, t.TempDir(), 4, 3000, 600)
	c := dev()
	mustPut(t, c, src, "")
	if !be.once.Load() {
		t.Fatal("no record batch lost its answer")
	}
	if infos, err := be.List(ctx, versionsDir); err == nil || !errors.Is(err, storage.ErrNotFound) {
		n := 0
		for _, d := range infos {
			sub, _ := be.List(ctx, storage.Join(versionsDir, d.Name))
			n += len(sub)
		}
		if n > 0 {
			t.Fatalf("%d record versions kept by a put of new files", n)
		}
	}
	sameFile(t, dev(), filepath.Join(src, "f00"), "race/f00")
}

// seededDevices returns a maker of devices (clients of one key) over be, after one of
// them stored a first file: the namespace exists, its key check and first root written.
func seededDevices(t *testing.T, be storage.Backend) func() *Client {
	t.Helper()
	dev := devices(t, be)
	seed := filepath.Join(t.TempDir(), "seed")
	write(t, seed, []byte("seed"))
	mustPut(t, dev(), seed, "")
	return dev
}

// deadOverwrite runs a put of folder race (6 files, from srcA) during which another
// device's put of the same names writes its records over a's and dies before publishing
// (its root is never written). It returns the devices' maker and srcA.
func deadOverwrite(t *testing.T) (func() *Client, string) {
	t.Helper()
	be := &hookMatchBE{matchBE: matchBE{absentBE{&condBE{Backend: newBackend(t)}}}}
	dev := seededDevices(t, be)
	srcA := writeTree(t, t.TempDir(), 6, 3000, 300)
	srcB := writeTree(t, t.TempDir(), 6, 3000, 400)
	be.after = func() {
		b := dev()
		b.be = &noRootBE{Backend: be}
		b.Put(ctx, []string{srcB}, "")
	}
	a := dev()
	a.opts.Jobs = 1
	if _, err := a.Put(ctx, []string{srcA}, ""); err != nil {
		t.Fatal(err)
	}
	return dev, srcA
}
