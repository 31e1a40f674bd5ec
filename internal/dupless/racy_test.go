package dupless

import (
	"bytes"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Racy clean (git's name for it): a file changed after put read it, with nothing in its
// stat moving, must not be judged unchanged by later puts.
//
// On a file system with coarse timestamps (ext2/3: 1 s; ext4 before Linux 6.13: one jiffy)
// a same-size write within the tick of put's read keeps size, mtime, ctime and inode. The
// tests reproduce exactly that state on any file system with writes through a shared
// mapping: the first store to a page stamps mtime and ctime (the write fault), later stores
// to the already dirty page change the content and stamp nothing, just as a second write
// within one timestamp tick does. The put code sees the real file and its real lstat/fstat:
// nothing in the decision is simulated.

// mapped maps the file at path shared and writable (its size unchanged).
func mapped(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	return m
}

// statOf is what put compares of a file: size, mtime, ctime, inode, device.
type statOf struct {
	size, mtime, ctime int64
	ino, dev           uint64
}

func lstatOf(t *testing.T, path string) statOf {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	ctime, ino, dev, _ := statIDs(fi)
	return statOf{fi.Size(), fi.ModTime().UnixNano(), ctime, ino, dev}
}

// rewriteUnseen overwrites the mapped file's content in place, and skips the test if the
// kernel stamped the file meanwhile (its dirty page was written back, so the store
// faulted): then the state this test needs was not reached, and any put would see the
// change by its ctime.
func rewriteUnseen(t *testing.T, path string, m []byte, b byte) {
	t.Helper()
	before := lstatOf(t, path)
	for i := range m {
		m[i] = b
	}
	if after := lstatOf(t, path); after != before {
		t.Skipf("the kernel stamped the file on a write to its dirty mapping (%+v -> %+v): racy state not reached", before, after)
	}
}

// storedContent gets the stored file at dest with a fresh client of dev.
func storedContent(t *testing.T, be storage.Backend, master []byte, dev *device, dest string) []byte {
	t.Helper()
	c := clientWith(t, be, master, dev.mem)
	out := t.TempDir()
	if _, err := c.Get(ctx, dest, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, filepath.Base(dest)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A put of a tree reads a file, which is changed right after within the same timestamp
// tick: the put cache remembers size, mtime, ctime and inode as they still are. The next
// put must read the file again and store the new content.
func TestPutCacheRacyClean(t *testing.T) {
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	f := filepath.Join(src, "d1", "sub", "f2")
	m := mapped(t, f)
	for i := range m {
		m[i] = 'a' // stamps the file now: just before the put reads it
	}
	dev.put(t, be, master, src, "")
	rewriteUnseen(t, f, m, 'b')
	sum := dev.put(t, be, master, src, "")
	want := bytes.Repeat([]byte{'b'}, len(m))
	if got := storedContent(t, be, master, dev, "src/d1/sub/f2"); !bytes.Equal(got, want) {
		t.Fatalf("the put after a change within the read's timestamp tick kept the old content (%d of %d files judged unchanged): stored %.8q..., want %.8q...",
			sum.Unchanged, n, got, want)
	}
}

// The same without a put cache entry for the file: a put of the file alone stores it (and
// leaves the put cache as it was), the file changes within the tick, and the next put of
// its tree decides from the record, which has the same size, mtime and mode. The lone put
// goes under the lock, or without it (one batch: putlockless.go).
func TestRacyCleanAfterLonePut(t *testing.T) {
	t.Run("locked", func(t *testing.T) { racyAfterLonePut(t, &recordReads{Backend: newBackend(t)}, nil) })
	t.Run("lock-free", func(t *testing.T) {
		be := &gateBE{absentBE: absentBE{&condBE{Backend: newBackend(t)}}}
		racyAfterLonePut(t, be, &be.absents)
	})
}

func racyAfterLonePut(t *testing.T, be storage.Backend, lockFree *atomic.Int64) {
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, _ := cacheTree(t)
	dev.put(t, be, master, src, "")
	f := filepath.Join(src, "d2", "sub", "f4")
	m := mapped(t, f)
	for i := range m {
		m[i] = 'a'
	}
	dev.put(t, be, master, f, "src/d2/sub")
	if lockFree != nil && lockFree.Load() != 1 {
		t.Fatalf("%d lock-free batches, want the lone put's", lockFree.Load())
	}
	rewriteUnseen(t, f, m, 'b')
	dev.put(t, be, master, src, "")
	want := bytes.Repeat([]byte{'b'}, len(m))
	if got := storedContent(t, be, master, dev, "src/d2/sub/f4"); !bytes.Equal(got, want) {
		t.Fatalf("the tree put after a lone put and a change within its read's tick kept the old content: stored %.8q..., want %.8q...", got, want)
	}
	// And a lone put again, after another unseen change.
	rewriteUnseen(t, f, m, 'c')
	dev.put(t, be, master, f, "src/d2/sub")
	want = bytes.Repeat([]byte{'c'}, len(m))
	if got := storedContent(t, be, master, dev, "src/d2/sub/f4"); !bytes.Equal(got, want) {
		t.Fatalf("the lone put after a change within the previous put's tick kept the old content: stored %.8q..., want %.8q...", got, want)
	}
}

// putLongAfter runs the test's puts as if long after its files were written: its read of
// a file starts an hour after the file's mtime and ctime, so the put cache trusts what it
// noted (the tests of skipping unchanged files; fresh files are read once more).
func putLongAfter(t *testing.T) {
	was := putClock
	putClock = func() time.Time { return time.Now().Add(time.Hour) }
	t.Cleanup(func() { putClock = was })
}

// What racy entries cost: a put reads again only the files whose mtime or ctime was within
// racyMargin of its previous read of them, and trusts them again once a put has read them
// long enough after: the second put of an unchanged tree still reads nothing.
func TestRacyEntriesAreReadOnce(t *testing.T) {
	be := &recordReads{Backend: newBackend(t)}
	master, dev := NewMasterKey(), newDevice(t, "/srv/a")
	src, n := cacheTree(t)
	later := func(put func() *Summary) *Summary { // a put long after the files were written
		was := putClock
		putClock = func() time.Time { return time.Now().Add(time.Hour) }
		defer func() { putClock = was }()
		return put()
	}
	now := func() *Summary { return dev.put(t, be, master, src, "") }
	// check a put that read the records of files files (and listed at most their 4
	// directories): files is how many were read again.
	check := func(what string, sum *Summary, files int64) {
		t.Helper()
		if got := be.reads.Load(); got < files || got > files+min(files, 4) || sum.Unchanged != n || be.writes.Load() != 0 {
			t.Fatalf("%s: %d reads of the tree, %d of %d unchanged, %d objects written; want %d records read, all unchanged, none written",
				what, got, sum.Unchanged, n, be.writes.Load(), files)
		}
		be.reads.Store(0)
		be.writes.Store(0)
	}
	now() // the files were just written: every entry is racy
	be.reads.Store(0)
	be.writes.Store(0)
	check("put right after", now(), int64(n)) // read again (its record, then its content): all the same
	check("put long after", later(now), int64(n))
	check("the next put", now(), 0) // trusted: the second put of an unchanged tree reads nothing
	// One file changed now: stored, and read once more by the next put only.
	f := filepath.Join(src, "d0", "sub", "f1")
	write(t, f, []byte("changed just now, another size"))
	if sum := now(); sum.Unchanged != n-1 {
		t.Fatalf("put of one changed file: %d unchanged, want %d", sum.Unchanged, n-1)
	}
	be.reads.Store(0)
	be.writes.Store(0)
	check("put right after the change", now(), 1)
	check("put long after the change", later(now), 1)
	check("the next put after the change", now(), 0)
}

// racy's edge: a file is trusted when its mtime and ctime are older than the read's start
// by more than racyMargin; a future mtime is never trusted.
func TestRacyMargin(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	write(t, f, []byte("x"))
	fi, _ := os.Lstat(f)
	ctime, _, _, _ := statIDs(fi)
	newest := time.Unix(0, max(ctime, fi.ModTime().UnixNano()))
	if !racy(fi, newest.Add(racyMargin)) || racy(fi, newest.Add(racyMargin+time.Nanosecond)) {
		t.Fatalf("racy at newest+margin %v, at newest+margin+1ns %v; want true, false",
			racy(fi, newest.Add(racyMargin)), racy(fi, newest.Add(racyMargin+time.Nanosecond)))
	}
	if !racy(fi, time.Time{}) {
		t.Fatal("not racy without a read time (noted without reading)")
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(f, future, future)
	fi, _ = os.Lstat(f)
	if !racy(fi, time.Now().Add(time.Minute)) {
		t.Fatal("a file with a future mtime trusted")
	}
}
