package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// get --include leaves a directory nothing was selected in untouched; when a symlink
// (not made by get) stands at its place in the destination, get must not follow it to
// change the mode and times of what it points to.
func TestGetLazyDirDoesNotFollowLocalSymlink(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "sub", "x.bin"), []byte("x"))
	os.Chmod(filepath.Join(src, "sub"), 0o700)
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	os.Chtimes(filepath.Join(src, "sub"), old, old)
	mustPut(t, c, src, "")

	outside := t.TempDir()
	os.Chmod(outside, 0o755)
	dest := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dest, "sub")); err != nil {
		t.Fatal(err)
	}
	c.opts.GetInclude = []string{"*.txt"}
	c.Get(ctx, "src", dest) // errors are fine; writing through the link is not
	fi, err := os.Stat(outside)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 || fi.ModTime().Equal(old) {
		t.Fatalf("get changed the directory a local symlink points to: mode %v, mtime %v", fi.Mode(), fi.ModTime())
	}
}

// A symlink or FIFO whose name is as long as veil stores (255 bytes) is restored: the
// temporary name get makes beside it must fit the file system's name limit too.
func TestGetLongNamedSymlinkAndFIFO(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "f"), []byte("x"))
	link, fifo := strings.Repeat("l", 255), strings.Repeat("p", 250)
	if err := os.Symlink("f", filepath.Join(src, link)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(src, fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, src, "")
	dest := filepath.Join(t.TempDir(), "out")
	sum, err := c.Get(ctx, "src", dest)
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if target, err := os.Readlink(filepath.Join(dest, link)); err != nil || target != "f" {
		t.Fatalf("long-named symlink: %q %v", target, err)
	}
	if fi, err := os.Lstat(filepath.Join(dest, fifo)); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("long-named FIFO: %v %v", fi, err)
	}
}

// check reports a directory metadata record the newest root lists but the storage service
// deleted, as get does (a deleted file record is reported; so must a folder's be).
func TestCheckReportsDeletedDirRecord(t *testing.T) {
	root := t.TempDir()
	be := newBackendAt(t, root)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "f"), []byte("x"))
	mustPut(t, c, src, "")
	enc, err := c.keys.encPath("d")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Check(ctx, CheckOptions{}); err != nil || len(res.Problems) != 0 {
		t.Fatalf("check of a sound tree: %+v %v", res, err)
	}
	if _, listed := c.rootHash(enc + "/" + dirMetaName); !listed {
		t.Fatal("the root does not list the folder's record")
	}
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(enc), dirMetaName)); err != nil {
		t.Fatal(err)
	}
	// get reports it ...
	if sum, _ := c.Get(ctx, "d", filepath.Join(t.TempDir(), "out")); sum.Err() == nil {
		t.Fatal("get did not report the deleted folder record")
	}
	// ... and so must check.
	res, err := c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 1 || !strings.Contains(res.Problems[0].Err, "deleted") {
		t.Fatalf("check after the folder record was deleted: %+v %v", res, err)
	}
}

// A FIFO is a stored entry like any other: the mount's view lists it and must be able to
// look it up (before, Lookup failed with "key record rejected", EIO in the mount).
func TestViewLookupSpecial(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "f"), []byte("x"))
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o640); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, src, "")
	cat, err := c.OpenCatalog(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	v := cat.Current()
	es, err := v.Entries(ctx, "src")
	if err != nil || len(es) != 2 {
		t.Fatalf("entries: %+v %v", es, err)
	}
	for _, e := range es {
		if _, err := v.Lookup(ctx, "src", e.Name); err != nil {
			t.Errorf("lookup of listed entry %q: %v", e.Name, err)
		}
	}
}

// A time as 'veil snapshots' prints it (local time, to the second) selects that snapshot
// with --at, as a date selects the snapshots of that whole day.
func TestAtPrintedSnapshotTime(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, []byte("one"))
	mustPut(t, c, src, "")
	write(t, src, []byte("two"))
	os.Chtimes(src, time.Now(), time.Now().Add(time.Hour))
	mustPut(t, c, src, "")
	snaps, err := c.Snapshots(ctx)
	if err != nil || len(snaps) < 2 {
		t.Fatal(snaps, err)
	}
	for _, s := range snaps {
		for _, layout := range []string{time.DateTime, "2006-01-02 15:04"} {
			printed := s.Time.Local().Format(layout)
			when, err := ParseWhen(printed, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if when.Before(s.Time) {
				t.Errorf("--at %q (as printed for snapshot %d at %v) means %v, before the snapshot", printed, s.Seq, s.Time, when)
			}
		}
	}
}

// hideRecordsBE answers every GET of a file record "not found" while Stat still finds it:
// what a hostile storage service can do, or a put landing between get's two looks.
type hideRecordsBE struct {
	storage.Backend
	on bool
}

func (b *hideRecordsBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if b.on && strings.HasSuffix(name, keySuffix) {
		return nil, fmt.Errorf("%s: %w", name, storage.ErrNotFound)
	}
	return b.Backend.Get(ctx, dir, name)
}

// get of a file whose record cannot be read but whose name is found is an error, not a
// crash (a nil task was sent to the workers).
func TestGetRecordVanishesBetweenLooks(t *testing.T) {
	be := &hideRecordsBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, []byte("x"))
	mustPut(t, c, src, "")
	be.on = true
	c.opts.RootCheck = RootWarn // the root lists it: only --no-root-check goes on to look again
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("get panicked: %v", p)
		}
	}()
	if _, err := c.Get(ctx, "f", filepath.Join(t.TempDir(), "out")); err == nil {
		t.Fatal("get of an unreadable record succeeded")
	}
}

// cat's failures name the file, as get's do: a tampered chunk, and a FIFO (an authentic
// record, not a rejected one).
func TestCatErrorsNameTheFile(t *testing.T) {
	root := t.TempDir()
	be := newBackendAt(t, root)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "data.bin"), randBytes(1000, 7))
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustPut(t, c, src, "")
	for _, f := range chunkObjects(t, root) {
		b, _ := os.ReadFile(f)
		b[len(b)/2] ^= 1
		os.WriteFile(f, b, 0o644)
	}
	err := c.Cat(ctx, "src/data.bin", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "src/data.bin") || !errors.Is(err, ErrIntegrity) {
		t.Errorf("cat of a tampered file: %v", err)
	}
	err = c.Cat(ctx, "src/pipe", io.Discard)
	if err == nil || !strings.Contains(err.Error(), "src/pipe") || errors.Is(err, ErrRecord) {
		t.Errorf("cat of a FIFO: %v", err)
	}
}

// stallNamesBE never answers a GET of a long name's name object until the request's
// context ends (or release is closed).
type stallNamesBE struct {
	storage.Backend
	release chan struct{}
}

func (b *stallNamesBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if dir == namesDir {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.release:
		}
	}
	return b.Backend.Get(ctx, dir, name)
}

// get ends when its context does, also while a long name's name object is being read.
func TestGetLongNameLoadHonoursContext(t *testing.T) {
	be := &stallNamesBE{Backend: newBackend(t), release: make(chan struct{})}
	master := NewMasterKey()
	c, _ := New(be, master, Options{Keys: mle.LocalKeys{}, Jobs: 3})
	defer c.Close()
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, strings.Repeat("n", 200)), []byte("x"))
	mustPut(t, c, src, "")
	r := freshClient(t, c, master)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := r.Get(cctx, "d", filepath.Join(t.TempDir(), "out")); done <- err }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(be.release)
		<-done
		t.Fatal("get did not end with its context while a name object was being read")
	}
}

// --overwrite never leaves every existing entry as it is, an existing directory's mode
// and times too (found by review: get chmodded it to the stored mode).
func TestOverwriteNeverLeavesExistingDir(t *testing.T) {
	be := newBackend(t)
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	write(t, filepath.Join(src, "sub", "f"), []byte("x"))
	os.Chmod(filepath.Join(src, "sub"), 0o700)
	mustPut(t, c, src, "")
	dest := filepath.Join(t.TempDir(), "out")
	os.MkdirAll(filepath.Join(dest, "sub"), 0o755)
	os.Chmod(filepath.Join(dest, "sub"), 0o755)
	c.opts.Overwrite = OverwriteNever
	if _, err := c.Get(ctx, "src", dest); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dest, "sub")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("--overwrite never changed an existing directory: %v %v", fi.Mode(), err)
	}
	c.opts.Overwrite = OverwriteAlways
	if _, err := c.Get(ctx, "src", dest); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dest, "sub")); fi.Mode().Perm() != 0o700 {
		t.Fatalf("the default overwrite left the directory's mode: %v", fi.Mode())
	}
}
