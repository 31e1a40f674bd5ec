package dupless

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
)

// storedNames lists the name objects under .veil/names.
func storedNames(t *testing.T, be storage.Backend) []string {
	t.Helper()
	objs, err := be.List(ctx, namesDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}

// allReadable checks, each with a client that has loaded no long name, that check finds
// no damage, that the newest tree lists without an error entry and gets whole, and that
// every snapshot gets whole.
func allReadable(t *testing.T, dev func() *Client) {
	t.Helper()
	res, err := dev().Check(ctx, CheckOptions{ReadData: true})
	if err != nil || len(res.Problems) != 0 {
		t.Fatalf("check: %+v, %v", res, err)
	}
	es, err := dev().List(ctx, "", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Err != "" {
			t.Fatalf("ls: %s: %s", e.Path, e.Err)
		}
	}
	getAll := func(c *Client, what string) {
		t.Helper()
		sum, err := c.Get(ctx, "", filepath.Join(t.TempDir(), "out"))
		if err == nil {
			err = sum.Err()
		}
		if err != nil {
			t.Fatalf("get of %s: %v", what, err)
		}
	}
	getAll(dev(), "the newest tree")
	snaps, err := dev().Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		c := dev()
		if _, err := c.PinSnapshot(ctx, s.Seq); err != nil {
			t.Fatal(err)
		}
		getAll(c, "snapshot "+itoa(int(s.Seq)))
	}
}

// The review's scenario: long names (a folder and the files in it, and files in a short
// folder), removed with rm -r and rm, their snapshots forgotten, then pruned: their name
// objects go (they stayed for good before), and what is left checks and reads.
func TestPruneRemovesUnusedLongNames(t *testing.T) {
	be := newBackend(t)
	dev := devices(t, be)
	c := dev()
	src := t.TempDir()
	write(t, filepath.Join(src, "keep"), []byte("kept"))
	mustPut(t, c, filepath.Join(src, "keep"), "")
	long := filepath.Join(src, strings.Repeat("d", 200))
	short := filepath.Join(src, "short")
	var files []string
	for i := range 5 {
		name := strings.Repeat(string(rune('a'+i)), 180+i)
		write(t, filepath.Join(long, name), randBytes(100, uint64(40+i)))
		write(t, filepath.Join(long, strings.Repeat("n", 190), name), randBytes(100, uint64(50+i)))
		write(t, filepath.Join(short, name+"s"), randBytes(100, uint64(60+i)))
		files = append(files, "short/"+name+"s")
	}
	mustPut(t, c, long, "")
	mustPut(t, c, short, "")
	if got := len(storedNames(t, be)); got != 1+1+5+5 {
		t.Fatalf("%d name objects after the puts, want 12", got)
	}
	if _, err := dev().Remove(ctx, strings.Repeat("d", 200), true); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := dev().Remove(ctx, f, false); err != nil {
			t.Fatal(err)
		}
	}
	if pr, err := dev().Prune(ctx, 0, false); err != nil || pr.NamesRemoved != 0 {
		t.Fatalf("prune while snapshots list them: %+v, %v; want no name object removed", pr, err)
	}
	if _, err := dev().Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	dry, err := dev().Prune(ctx, 0, true)
	if err != nil || dry.NamesRemoved != 12 || len(storedNames(t, be)) != 12 {
		t.Fatalf("dry run: %+v, %v, %d left; want 12 to remove and none removed", dry, err, len(storedNames(t, be)))
	}
	pr, err := dev().Prune(ctx, 0, false)
	if err != nil || pr.NamesRemoved != 12 {
		t.Fatalf("prune: %+v, %v; want the 12 name objects removed", pr, err)
	}
	if left := storedNames(t, be); len(left) != 0 {
		t.Fatalf("name objects left after rm, forget and prune: %q", left)
	}
	allReadable(t, dev)
	if pr, err := dev().Prune(ctx, 0, false); err != nil || pr.NamesRemoved != 0 {
		t.Fatalf("prune again: %+v, %v", pr, err)
	}
}

// A name object stays while anything can still reach its tag: another folder's file of
// the same name, a retained snapshot, a folder left after its files were removed (listed
// by the roots, or, without a record of its own, seen only by the walk); and a young one
// stays for the grace period. What is left checks and reads, in every snapshot.
func TestPruneKeepsLongNamesInUse(t *testing.T) {
	be := newBackend(t)
	dev := devices(t, be)
	c := dev()
	src := t.TempDir()
	shared, snap, folder := strings.Repeat("s", 200), strings.Repeat("k", 200), strings.Repeat("f", 200)
	write(t, filepath.Join(src, "x", shared), []byte("x"))
	write(t, filepath.Join(src, "y", shared), []byte("y"))
	write(t, filepath.Join(src, "z", snap), []byte("z"))
	write(t, filepath.Join(src, folder, "f"), []byte("f"))
	for _, d := range []string{"x", "y", "z", folder} {
		mustPut(t, c, filepath.Join(src, d), "")
	}
	// A folder made by a put into it has no record of its own: once its file is removed,
	// no root lists it, and only prune's walk sees it (ls shows it).
	bare := strings.Repeat("b", 200)
	write(t, filepath.Join(src, "g"), []byte("g"))
	mustPut(t, c, filepath.Join(src, "g"), bare)
	tag := func(name string) string { return c.keys.longTag(name) }
	for _, p := range []string{"x/" + shared, "z/" + snap, folder + "/f", bare + "/g"} {
		if _, err := dev().Remove(ctx, p, false); err != nil {
			t.Fatal(err)
		}
	}
	if pr, err := dev().Prune(ctx, DefaultGrace, false); err != nil || pr.NamesRemoved != 0 {
		t.Fatalf("prune within the grace period: %+v, %v; want none removed", pr, err)
	}
	if pr, err := dev().Prune(ctx, 0, false); err != nil || pr.NamesRemoved != 0 {
		t.Fatalf("prune while every name is reachable: %+v, %v; want none removed", pr, err)
	}
	allReadable(t, dev) // the snapshots before the rm list z/<snap>
	if _, err := dev().Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	pr, err := dev().Prune(ctx, 0, false)
	if err != nil || pr.NamesRemoved != 1 {
		t.Fatalf("prune after forget: %+v, %v; want only the snapshot's name removed", pr, err)
	}
	left := storedNames(t, be)
	if want := []string{tag(shared), tag(folder), tag(bare)}; !slices.Equal(slices.Sorted(slices.Values(left)), slices.Sorted(slices.Values(want))) {
		t.Fatalf("name objects left %q, want the shared name's and the folders'", left)
	}
	allReadable(t, dev)
	if _, err := dev().Prune(ctx, 0, false); err != nil { // its walk reads the folders' names
		t.Fatal(err)
	}
}

// A client that wrote a name object in one command writes it again in the next: another
// device may have pruned it meanwhile. Before, the client remembered it as stored and its
// next put under the name pointed at nothing.
func TestLongNameWrittenAgainAfterPrune(t *testing.T) {
	be := newBackend(t)
	dev := devices(t, be)
	a := dev()
	src := t.TempDir()
	name := strings.Repeat("r", 200)
	write(t, filepath.Join(src, "d", name), []byte("one"))
	write(t, filepath.Join(src, "keep"), []byte("keep"))
	mustPut(t, a, filepath.Join(src, "keep"), "")
	mustPut(t, a, filepath.Join(src, "d"), "")
	b := dev()
	if _, err := b.Remove(ctx, "d/"+name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	if pr, err := b.Prune(ctx, 0, false); err != nil || pr.NamesRemoved != 1 {
		t.Fatalf("prune: %+v, %v", pr, err)
	}
	write(t, filepath.Join(src, "d", name), []byte("two"))
	mustPut(t, a, filepath.Join(src, "d"), "")
	if len(storedNames(t, be)) != 1 {
		t.Fatal("the put under a pruned long name did not write its name object again")
	}
	allReadable(t, dev)
}

// A lock-free put of a file under a long name whose name object is stored and unused
// (an earlier file of that name was removed and its snapshots forgotten) races prune:
// the put has read root n, and its batch is held while a whole prune runs and deletes the
// name object; then the batch commits (the prune mark is gone, n+1 is free). The batch
// carries the name object, so the file is listed, read and checked. Before, the put
// found the object present and wrote none: the file's folder listed it with an error,
// and get of the folder and check stopped on it.
func TestLocklessLongNamePutRacesPrune(t *testing.T) {
	be, dev := newGateBE(t)
	longNamePutRacesPrune(t, dev, func(f func([]storage.Object)) { be.onBatch = f })
}

// The same race against the storage service itself, over HTTPS.
func TestLocklessLongNamePutRacesPruneService(t *testing.T) {
	url, cred := reviewServe(t)
	rb, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rb.Close() })
	be := &holdBatchBE{Backend: rb}
	longNamePutRacesPrune(t, devices(t, be), func(f func([]storage.Object)) { be.onBatch = f })
}

// holdBatchBE is the storage service's client with a hook before each batch.
type holdBatchBE struct {
	*remote.Backend
	onBatch func(objs []storage.Object)
}

func (b *holdBatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if b.onBatch != nil {
		b.onBatch(objs)
	}
	return b.Backend.PutBatch(ctx, objs)
}

func longNamePutRacesPrune(t *testing.T, dev func() *Client, hook func(func([]storage.Object))) {
	name := strings.Repeat("L", 200)
	file := filepath.Join(t.TempDir(), name)
	write(t, file, randBytes(4096, 70))
	owner := dev()
	if _, err := owner.Put(ctx, []string{file}, ""); err != nil { // the first: under the lock (key check)
		t.Fatal(err)
	}
	if _, err := owner.Remove(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	paused, resume := make(chan struct{}), make(chan struct{})
	var lockless atomic.Int64
	var sent []byte // the lock-free batch's record
	hook(func(objs []storage.Object) {
		if isLockless(objs) && lockless.Add(1) == 1 {
			for _, o := range objs {
				if strings.HasSuffix(o.Name, keySuffix) {
					sent = o.Data
				}
			}
			close(paused)
			<-resume
		}
	})
	write(t, file, randBytes(4096, 71))
	done := make(chan error, 1)
	go func() { _, err := dev().Put(ctx, []string{file}, ""); done <- err }()
	select {
	case <-paused:
	case err := <-done:
		t.Fatalf("the put ended without a lock-free batch: %v", err)
	}
	pr, err := dev().Prune(ctx, 0, false)
	if err != nil || pr.NamesRemoved != 1 {
		t.Fatalf("prune: %+v, %v; want the unused name object removed", pr, err)
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c := dev()
	encDir, encName, _ := c.encFile(name)
	if stored, err := c.getObject(ctx, encDir, encName+keySuffix); err != nil || lockless.Load() != 1 || !bytes.Equal(stored, sent) {
		t.Fatalf("%d lock-free batches, stored record from it %v (%v); want the put's one, committed", lockless.Load(), bytes.Equal(stored, sent), err)
	}
	sameFile(t, dev(), file, name)
	allReadable(t, dev)
}
