package dupless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// rootForms sets, for one test, the size from which roots are version 2 and the largest
// delta they carry.
func rootForms(t *testing.T, from, deltaMax int) {
	oldFrom, oldMax := rootBaseFrom, rootDeltaMax
	rootBaseFrom, rootDeltaMax = from, deltaMax
	t.Cleanup(func() { rootBaseFrom, rootDeltaMax = oldFrom, oldMax })
}

// baseNamespace is a namespace of 300 files whose roots are version 2 (past 8 KiB of
// entries, deltas up to 4 KiB): its storage, its devices, and the device that put them.
func baseNamespace(t *testing.T) (storage.Backend, func() *Client, *Client) {
	t.Helper()
	rootForms(t, 8<<10, 4<<10)
	be := newBackend(t)
	dev := devices(t, be)
	c := dev()
	if _, err := c.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	return be, dev, c
}

// bigTree writes n small files under dir/tree, in 10 folders.
func bigTree(t *testing.T, n int) string {
	t.Helper()
	tree := filepath.Join(t.TempDir(), "tree")
	for i := range n {
		write(t, filepath.Join(tree, fmt.Sprintf("d%d", i%10), fmt.Sprintf("file-%04d", i)), []byte(fmt.Sprint(i)))
	}
	return tree
}

// A namespace past rootBaseFrom writes version 2 roots: a base once, then roots holding
// only the changes since it, which a new device (no cache) reads back as the full list; a
// delta past its bound makes a new base; every snapshot still reads whole.
func TestRootBaseAndDelta(t *testing.T) {
	be, dev, c := baseNamespace(t)
	first := c.view.root
	if first.base == nil || len(first.delta) != 0 {
		t.Fatalf("a root of %d entries: base %v, %d changes; want a new base and no changes", len(first.Entries), first.base != nil, len(first.delta))
	}
	if b := testutil.GetObject(t, be, rootsDir, rootName(first.Seq)); b[0] != rootVersion2 || len(b) > 1024 {
		t.Fatalf("root %d: version %d, %d bytes; want a small version 2 root", first.Seq, b[0], len(b))
	}
	dir := t.TempDir()
	for i := range 5 {
		src := filepath.Join(dir, fmt.Sprint("new", i))
		write(t, src, randBytes(100, uint64(i)))
		if _, err := c.Put(ctx, []string{src}, "tree/d1"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Remove(ctx, "tree/d2/file-0002", false); err != nil {
		t.Fatal(err)
	}
	last := c.view.root
	if last.base == nil || last.base.id != first.base.id || len(last.delta) != 6 {
		t.Fatalf("after 6 changes: %d changes on base %x; want 6 on the first base %x", len(last.delta), last.base.id, first.base.id)
	}
	// A new device reads every root in full, base and delta.
	d := dev()
	got, err := d.latestRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Entries) != len(last.Entries) || len(got.Entries) != len(first.Entries)+5-1 {
		t.Fatalf("new device reads %d entries; the writer has %d", len(got.Entries), len(last.Entries))
	}
	for p, h := range last.Entries {
		if got.Entries[p] != h {
			t.Fatalf("%s: read differently by a new device", p)
		}
	}
	if snaps, err := d.Snapshots(ctx); err != nil || len(snaps) != 7 || snaps[0].Files != 300 {
		t.Fatalf("snapshots: %v, %+v", err, snaps)
	}
	sameFile(t, d, filepath.Join(dir, "new3"), "tree/d1/new3")
	// Changes past the delta's bound: a new base.
	for i := range 60 {
		src := filepath.Join(dir, fmt.Sprint("more", i))
		write(t, src, randBytes(100, uint64(100+i)))
		if _, err := c.Put(ctx, []string{src}, "tree/d4"); err != nil {
			t.Fatal(err)
		}
	}
	if c.view.root.base.id == first.base.id {
		t.Fatal("60 more changes (past the delta's 4 KiB) kept the first base")
	}
	if n := len(listNames(t, be, basesDir)); n != 2 {
		t.Fatalf("%d bases stored, want 2", n)
	}
	if _, err := dev().latestRoot(ctx); err != nil {
		t.Fatal(err)
	}
}

// A base that is missing, replaced or damaged fails every read of its roots as damage
// (ErrIntegrity), naming the base; the storage cannot substitute another base of the
// same key.
func TestRootBaseTampered(t *testing.T) {
	be, dev, c := baseNamespace(t)
	name := baseName(c.view.root.base.id)
	orig := testutil.GetObject(t, be, basesDir, name)
	// Another base of the same key, from a later checkpoint of a second tree.
	if _, err := c.Put(ctx, []string{bigTree(t, 400)}, "other"); err != nil {
		t.Fatal(err)
	}
	other := testutil.GetObject(t, be, basesDir, baseName(c.view.root.base.id))
	flipped := bytes.Clone(orig)
	flipped[len(flipped)/2] ^= 1
	for what, b := range map[string][]byte{"damaged": flipped, "another base of the key": other, "missing": nil} {
		if b == nil {
			if err := be.Delete(ctx, basesDir, name); err != nil {
				t.Fatal(err)
			}
		} else {
			testutil.PutObject(t, be, basesDir, name, b)
		}
		_, err := dev().fetchRootSeq(ctx, 1)
		if !errors.Is(err, ErrIntegrity) || !bytes.Contains([]byte(err.Error()), []byte(name)) {
			t.Errorf("%s base: %v; want an integrity error naming %s", what, err, name)
		}
	}
}

// Prune deletes the bases no retained root refers to (after forget, or left by a command
// whose root lost its number), never one a retained root uses.
func TestPruneDeletesUnusedBases(t *testing.T) {
	rootForms(t, 8<<10, 2<<10)
	be := newBackend(t)
	c := devices(t, be)()
	if _, err := c.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range 40 {
		src := filepath.Join(dir, fmt.Sprint("f", i))
		write(t, src, randBytes(100, uint64(i)))
		if _, err := c.Put(ctx, []string{src}, "tree"); err != nil {
			t.Fatal(err)
		}
	}
	bases := listNames(t, be, basesDir)
	if len(bases) < 2 {
		t.Fatalf("%d bases: the test needs a checkpoint", len(bases))
	}
	orphan := bytes.Repeat([]byte{1}, 64) // a base whose root lost its number
	if err := be.Put(ctx, basesDir, "00112233445566778899aabbccddeeff", bytes.NewReader(orphan), 64); err != nil {
		t.Fatal(err)
	}
	res, err := c.Prune(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.BasesRemoved != 1 {
		t.Fatalf("prune removed %d bases, want the orphan only", res.BasesRemoved)
	}
	// Forget every snapshot but the newest: the older bases go.
	if _, err := c.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	if res, err = c.Prune(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	if left := listNames(t, be, basesDir); len(left) != 1 || left[0] != baseName(c.view.root.base.id) || res.BasesRemoved != len(bases)-1 {
		t.Fatalf("after forget and prune: %v left (%d removed), want only the newest root's base", left, res.BasesRemoved)
	}
	if _, err := devices(t, be)().Snapshots(ctx); err == nil {
		t.Fatal("a device of another key listed the snapshots")
	}
	if _, err := c.fetchRootSeq(ctx, c.view.root.Seq); err != nil {
		t.Fatal(err)
	}
}

func listNames(t *testing.T, be storage.Backend, dir string) []string {
	t.Helper()
	infos, err := be.List(ctx, dir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	return out
}

// On a version 2 root a lone small put still goes without the lock, its small root in its
// batch; the put whose changes outgrow the delta goes under the lock, which writes the new
// base before the root that names it. Another device sees every file.
func TestLocklessPutOnBase(t *testing.T) {
	rootForms(t, 8<<10, 1<<10)
	be, dev := newGateBE(t)
	c := dev()
	if _, err := c.Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var rootBytes []int
	be.onBatch = func(objs []storage.Object) {
		for _, o := range objs {
			if writeKind(o.Dir, o.Name) == "root" {
				rootBytes = append(rootBytes, len(o.Data))
			}
		}
	}
	lockFree := 0
	for i := range 12 {
		src := filepath.Join(dir, fmt.Sprint("lone", i))
		write(t, src, randBytes(4096, uint64(i)))
		absents, bases := be.absents.Load(), len(listNames(t, be, basesDir))
		if _, err := dev().Put(ctx, []string{src}, "tree/d5"); err != nil {
			t.Fatal(err)
		}
		newBase := len(listNames(t, be, basesDir)) > bases
		if be.absents.Load() > absents {
			lockFree++
			if newBase {
				t.Fatalf("put %d went without the lock and wrote a base", i)
			}
		} else if !newBase {
			t.Fatalf("put %d went under the lock without a new base to write", i)
		}
	}
	if lockFree < 8 || lockFree == 12 {
		t.Fatalf("%d of 12 lone puts without the lock; want most, and one checkpoint under it", lockFree)
	}
	for _, n := range rootBytes {
		if n > 2<<10 {
			t.Fatalf("a root of %d bytes in a lone put's batch; want a small delta", n)
		}
	}
	d := dev()
	for i := range 12 {
		sameFile(t, d, filepath.Join(dir, fmt.Sprint("lone", i)), fmt.Sprintf("tree/d5/lone%d", i))
	}
}

// baseGetsBE counts GETs of tree bases.
type baseGetsBE struct {
	storage.Backend
	n atomic.Int32 // the roots of a listing are read 8 at a time
}

func (b *baseGetsBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if dir == basesDir {
		b.n.Add(1)
	}
	return b.Backend.Get(ctx, dir, name)
}

// A device keeps the bases it read or wrote beside its put cache: its next commands read
// the small root only. A copy that is damaged, or another base's, is read again from the
// storage and replaced, never used.
func TestBaseCopyOnDevice(t *testing.T) {
	rootForms(t, 8<<10, 4<<10)
	be := &baseGetsBE{Backend: newBackend(t)}
	master := NewMasterKey()
	pc := &PutCache{Path: filepath.Join(t.TempDir(), "cache", "x.put"), Location: "here"}
	open := func(cache *PutCache) *Client {
		c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	if _, err := open(pc).Put(ctx, []string{bigTree(t, 300)}, ""); err != nil {
		t.Fatal(err)
	}
	latest := func(cache *PutCache) *treeRoot {
		t.Helper()
		r, err := open(cache).latestRoot(ctx)
		if err != nil || r == nil || len(r.Entries) < 300 {
			t.Fatalf("newest root: %v", err)
		}
		return r
	}
	if r := latest(pc); be.n.Load() != 0 || r.base == nil {
		t.Fatalf("a device that wrote the base read it %d times", be.n.Load())
	}
	copyPath := filepath.Join(baseDiskDir(pc), baseName(latest(pc).base.id))
	b, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	os.WriteFile(copyPath, b, 0o600)
	latest(pc)
	if be.n.Load() != 1 {
		t.Fatalf("damaged copy: %d base reads, want 1", be.n.Load())
	}
	if again, _ := os.ReadFile(copyPath); bytes.Equal(again, b) {
		t.Fatal("the damaged copy was kept")
	}
	latest(pc)
	latest(nil) // no cache: reads the base
	if be.n.Load() != 2 {
		t.Fatalf("%d base reads, want 2 (the damaged copy's, the cacheless device's)", be.n.Load())
	}
}
