package dupless

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// rootGetsBE counts the tree roots a client reads (n), and the reads of one object (obj).
type rootGetsBE struct {
	storage.Backend
	n, objGets atomic.Int64
	obj        string
}

func (b *rootGetsBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if d == rootsDir {
		b.n.Add(1)
	}
	if storage.Join(d, n) == b.obj {
		b.objGets.Add(1)
	}
	return b.Backend.Get(ctx, d, n)
}

// putFileVersions stores n versions of dir/d/f (sizes 100, 101, ...; one hour apart).
func putFileVersions(t *testing.T, c *Client, dir string, n int) {
	t.Helper()
	f := filepath.Join(dir, "d", "f")
	for i := range n {
		write(t, f, randBytes(100+i, uint64(i)))
		os.Chtimes(f, time.Now(), time.Now().Add(time.Duration(i)*time.Hour))
		mustPut(t, c, filepath.Join(dir, "d"), "")
	}
}

// countingClient opens a second client of master on be that counts root reads and the
// reads of obj.
func countingClient(t *testing.T, be storage.Backend, master []byte, obj string) (*Client, *rootGetsBE) {
	t.Helper()
	counting := &rootGetsBE{Backend: be, obj: obj}
	c, err := New(counting, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, counting
}

// A command that lists every snapshot reads each root once: the newest, which every
// command reads first, is not read again.
func TestSnapshotsReadEachRootOnce(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "d", "a"), []byte("a"))
	mustPut(t, c, filepath.Join(dir, "d"), "")
	write(t, filepath.Join(dir, "d", "b"), []byte("b"))
	mustPut(t, c, filepath.Join(dir, "d"), "")
	c2, counting := countingClient(t, be, master, "")
	snaps, err := c2.Snapshots(ctx)
	if err != nil || len(snaps) != 2 {
		t.Fatalf("snapshots: %v %v", snaps, err)
	}
	if n := counting.n.Load(); n != 2 {
		t.Fatalf("%d tree roots read for 2 snapshots, want 2", n)
	}
}

// log and diff read the record object now at a path once, however many of its versions
// they open.
func TestVersionsReadCurrentRecordOnce(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	putFileVersions(t, c, t.TempDir(), 3)
	encDir, encName, err := c.encFile("d/f")
	if err != nil {
		t.Fatal(err)
	}
	c2, counting := countingClient(t, be, master, storage.Join(encDir, encName+keySuffix))
	vs, err := c2.Log(ctx, "d/f")
	if err != nil || len(vs) != 3 || vs[0].Size != 100 || vs[2].Size != 102 || vs[0].Err != "" {
		t.Fatalf("log: %+v %v", vs, err)
	}
	if n := counting.objGets.Swap(0); n != 1 {
		t.Fatalf("log of 3 versions read the current record %d times, want 1", n)
	}
	chs, err := c2.Diff(ctx, "1", "2", "")
	if err != nil || len(chs) != 1 || chs[0].Kind != "modified" || chs[0].Err != "" {
		t.Fatalf("diff: %+v %v", chs, err)
	}
	if n := counting.objGets.Load(); n != 1 {
		t.Fatalf("diff of 2 versions read the current record %d times, want 1", n)
	}
}

// PinVersion reads the newest root once: Log has read and checked it.
func TestPinVersionReadsNewestRootOnce(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	putFileVersions(t, c, t.TempDir(), 2)
	c2, counting := countingClient(t, be, master, storage.Join(rootsDir, rootName(2)))
	if snap, err := c2.PinVersion(ctx, "d/f", 1); err != nil || snap.Seq != 1 {
		t.Fatalf("pin version 1: %+v %v", snap, err)
	}
	if n := counting.objGets.Load(); n != 1 {
		t.Fatalf("the newest root read %d times, want 1", n)
	}
}

// Forget leaves a gap mark (an empty object) for every root it drops, for a day: commands
// that read every snapshot skip the numbers the listing shows empty instead of fetching
// each mark.
func TestSnapshotsSkipGapMarks(t *testing.T) {
	be := newBackend(t)
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}})
	defer c.Close()
	putFileVersions(t, c, t.TempDir(), 5)
	if _, err := c.Forget(ctx, Policy{Last: 1}, false); err != nil {
		t.Fatal(err)
	}
	n, err := c.rootNumbers(ctx)
	if err != nil || len(n) != 5 {
		t.Fatalf("root numbers after forget: %v %v, want 5 (4 gap marks)", n, err)
	}
	c2, counting := countingClient(t, be, master, "")
	snaps, err := c2.Snapshots(ctx)
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %v %v", snaps, err)
	}
	if n := counting.n.Load(); n != 1 {
		t.Fatalf("%d tree root objects read for 1 snapshot beside 4 gap marks, want 1", n)
	}
}
