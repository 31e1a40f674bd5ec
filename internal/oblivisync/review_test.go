package oblivisync

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Regressions for the review of issue 6: each test fails without its fix.

// A truncate or write far past the backend's capacity used to build one in-memory
// fragment reference per C bytes of the new size (gigabytes for a large sparse file) and,
// at sizes near 2^64, wrapped fragCount so a later read indexed past the fragment list and
// panicked. The journal replayed the same operation on every restart. Both are refused.
func TestFileSizeBounded(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 2)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	a := must(w.Create(rootIno, "f", 0o644, 0, 0))
	limit := w.maxFileSize()
	for _, size := range []uint64{math.MaxUint64, math.MaxUint64 - 100, 1 << 62, limit + 1} {
		s := size
		if _, err := w.SetAttr(a.Ino, SetAttr{Size: &s}); !errors.Is(err, ErrFileTooBig) {
			t.Fatalf("truncate to %d: got %v, want ErrFileTooBig", size, err)
		}
	}
	if _, err := w.Write(a.Ino, int64(limit), []byte("x")); !errors.Is(err, ErrFileTooBig) {
		t.Fatalf("write past the limit: got %v, want ErrFileTooBig", err)
	}
	buf := make([]byte, 16)
	if _, err := w.Read(a.Ino, 1<<40, buf); err != nil {
		t.Fatal(err)
	}
	// Up to the limit is fine (a sparse file), and survives a restart.
	s := limit
	if _, err := w.SetAttr(a.Ino, SetAttr{Size: &s}); err != nil {
		t.Fatalf("truncate to the limit: %v", err)
	}
	must(w.Write(a.Ino, int64(limit)-3, []byte("end")))
	w.Close()
	w = openW(t, dir, w.StateDir())
	if n, err := w.Read(a.Ino, int64(limit)-3, buf); err != nil || string(buf[:n]) != "end" {
		t.Fatalf("after restart: %q %v", buf[:n], err)
	}
}

// A page record whose size makes fragCount wrap around must be rejected, not decoded
// into a node whose reads index past its fragment list.
func TestDecodeNodeRejectsWrappingSize(t *testing.T) {
	n := &node{Ino: 2, Parent: 1, Name: "x", Mode: 0o100644, Size: math.MaxUint64}
	n.Frags = make([]ref, fragCount(n.Size, vectorGeometry.C)) // wraps to a tiny count
	if _, _, err := decodeNode(appendNode(nil, n), vectorGeometry, 4); !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}

// Init used to pass unchecked argon2id parameters on: time 0 panicked inside argon2, and
// memory 0 (or a --kdf-memory that overflowed) sealed a key file that parseKeyFile then
// refused, leaving a backend nobody could open.
func TestInitRejectsBadKDF(t *testing.T) {
	for _, k := range []KDF{{Time: 0, MemoryKiB: 64, Threads: 1}, {Time: 1, MemoryKiB: 0, Threads: 1},
		{Time: 1, MemoryKiB: 64, Threads: 0}, {Time: 65, MemoryKiB: 64, Threads: 1}, {Time: 1, MemoryKiB: maxKDFMemoryKiB + 1, Threads: 1}} {
		dir := filepath.Join(t.TempDir(), "b")
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Init(%+v) panicked: %v", k, r)
				}
			}()
			err = Init(dir, testPass, Params{Files: 4, FileSize: 4096, K: 1, DripTime: 1e9}, k)
		}()
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("Init(%+v): got %v, want ErrInvalid", k, err)
		}
		if _, err := os.Stat(filepath.Join(dir, keyFileName)); err == nil {
			t.Fatalf("Init(%+v) left a key file", k)
		}
	}
}

// A key file is untrusted (it lives in the synced folder): a cloud that raises the
// argon2id memory must not make every client allocate gigabytes before the passphrase
// check fails.
func TestKeyFileMemoryCapped(t *testing.T) {
	kf := &keyFile{kdf: KDF{Time: 1, MemoryKiB: 64, Threads: 1}, params: Params{Files: 4, FileSize: 4096, K: 1, DripTime: 1e9}}
	img, err := sealKeyFile(kf, []byte("pw"), make([]byte, masterLen), make([]byte, 24))
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint32(img[9:], maxKDFMemoryKiB+1) // the memory field
	if _, err := parseKeyFile(img); !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
}

// The journal holds the pending writes in a form whose size follows the workload: a
// state directory inside the synced backend folder would hand the cloud exactly what
// ObliviSync hides.
func TestStateDirInsideBackendRefused(t *testing.T) {
	dir := newBackend(t, 4, 4096, 1)
	for _, sd := range []string{filepath.Join(dir, "state"), dir, filepath.Join(dir, "a", "..", "b")} {
		if w, err := OpenWriter(dir, testPass, Options{StateDir: sd}); !errors.Is(err, ErrInvalid) {
			if w != nil {
				w.Close()
			}
			t.Fatalf("state dir %s: got %v, want ErrInvalid", sd, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state")); err == nil {
		t.Fatal("state dir created inside the backend")
	}
}

// A writer killed mid-epoch leaves its half-written temp files in the backend folder,
// where the sync client uploads them (B bytes each, forever). The next writer of the same
// state directory removes its own at once; another writer's (or an older veil's) only
// once they are an hour old: a young one may be in flight in a running writer (issue 17:
// a second writer used to delete the first's temp file and kill it).
func TestStaleTempFilesRemoved(t *testing.T) {
	dir, state := newBackend(t, 4, 4096, 1), t.TempDir()
	w := openW(t, dir, state)
	tag := w.be.tag
	w.Close()
	put := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, bytes.Repeat([]byte{1}, 4096), 0o600); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-age)
		os.Chtimes(p, old, old)
		return p
	}
	gone := []string{put(".b000001.tmp-"+tag+"-123456", 0), put(".super.tmp99", 2*time.Hour),
		put(".tmp-123456", 2*time.Hour), put(".b000002.tmp-0123456789abcdef-77", 2*time.Hour)}
	kept := []string{put(".b000003.tmp-0123456789abcdef-78", time.Minute), put(".super.tmp98", time.Minute)}
	w = openW(t, dir, state)
	defer w.Close()
	for _, s := range gone {
		if _, err := os.Stat(s); err == nil {
			t.Fatalf("stale temp file %s still in the backend after the writer opened", filepath.Base(s))
		}
	}
	for _, s := range kept {
		if _, err := os.Stat(s); err != nil {
			t.Fatalf("young temp file %s of another writer removed: %v", filepath.Base(s), err)
		}
	}
}

// When the page table no longer fits the superblock (small B, many files), the epoch
// used to fail after writing its k files ("page table exceeds the superblock"), which
// stopped the writer, and every restart failed the same way: the writer was bricked.
// Pages that do not fit now wait (their inodes stay pending, reported by Drain).
func TestPageTableOverflowWaits(t *testing.T) {
	dir := newBackend(t, 498, 4096, 4) // leaves room for about one page in the superblock
	state := t.TempDir()
	w := openW(t, dir, state)
	var inos []uint64
	for i := 0; i < 90; i++ {
		a := must(w.Create(rootIno, fmt.Sprintf("file-%02d", i), 0o644, 0, 0))
		must(w.Write(a.Ino, 0, []byte(fmt.Sprint(i))))
		inos = append(inos, a.Ino)
	}
	for i := 0; i < 40; i++ {
		if _, err := w.Sync(); err != nil {
			t.Fatalf("epoch %d: %v", i, err)
		}
	}
	if st := w.Stats(); st.PendingInodes == 0 {
		t.Fatalf("expected inodes waiting for superblock space, got %+v", st)
	}
	w.Close()
	w = openW(t, dir, state)
	defer w.Close()
	buf := make([]byte, 8)
	for i, ino := range inos {
		if n, err := w.Read(ino, 0, buf); err != nil || string(buf[:n]) != fmt.Sprint(i) {
			t.Fatalf("file %d after restart: %q %v", i, buf[:n], err)
		}
	}
	if _, err := w.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReader(dir, testPass); err != nil {
		t.Fatal(err)
	}
}

// Two read-write writers on one backend (two machines mounting it read-write, each with
// its own journal) each rewrote the superblock without noticing the other, so each
// overwrote fragments only the other's superblock referenced. The backend's lease now
// refuses the second writer at start; if the lease did not reach it in time (a slow sync
// client), the first stops at its next epoch: its lease check sees the take-over, and
// its superblock check sees a superblock it did not write.
func TestSecondWriterDetected(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 3)
	a := openW(t, dir, t.TempDir())
	defer a.Close()
	f := must(a.Create(rootIno, "a.txt", 0o644, 0, 0))
	must(a.Write(f.Ino, 0, []byte("from a")))
	drain(t, a, 100)
	_, err := OpenWriter(dir, testPass, Options{StateDir: t.TempDir(), UnsafeNoFsync: true})
	wantErr(t, err, ErrLeased, "holds it")
	aLease := must(os.ReadFile(filepath.Join(dir, leaseName)))
	os.Remove(filepath.Join(dir, leaseName)) // as if the sync client had not delivered it yet
	b := openW(t, dir, t.TempDir())
	defer b.Close()
	if _, err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Sync(); !errors.Is(err, ErrLeased) {
		t.Fatalf("first writer after a second one took the lease: got %v, want ErrLeased", err)
	}
	a.broken = nil
	os.WriteFile(filepath.Join(dir, leaseName), aLease, 0o600) // the lease check alone would pass
	if _, err := a.Sync(); !errors.Is(err, ErrIntegrity) {
		t.Fatalf("first writer after a second one wrote: got %v, want ErrIntegrity", err)
	}
	if _, err := a.Write(f.Ino, 0, []byte("x")); err == nil {
		t.Fatal("the stopped writer still accepts writes")
	}
}

// On a reader's machine the sync client delivers an epoch's files in any order: the new
// superblock can arrive before a backend file it names. Reads used to fail at once with
// "rolled back?"; a reader now waits briefly for the file (a real rollback still fails).
func TestReaderWaitsForFilesInTransit(t *testing.T) {
	dir, ino, data := syncedBackend(t)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	f := r.t.get(ino).Frags[0].File
	path := filepath.Join(dir, blockName(f))
	old := must(os.ReadFile(path))
	w := openW(t, dir, t.TempDir())
	for w.sb.Written[f] == r.sb.Written[f] {
		if _, err := w.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := r.Refresh(); err != nil {
		t.Fatal(err)
	}
	cur := must(os.ReadFile(path))
	delete(r.be.cache, f)
	os.WriteFile(path, old, 0o600) // the new superblock is here, the new file is not yet
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(300 * time.Millisecond)
		// Deliver it as sync clients do (and as the writer writes): whole, by rename. An
		// in-place os.WriteFile let the reader see a truncated file in between (a flaky test).
		os.WriteFile(path+".delivery", cur, 0o600)
		os.Rename(path+".delivery", path)
	}()
	buf := make([]byte, len(data))
	n, err := r.Read(ino, 0, buf)
	<-done
	if err != nil || !bytes.Equal(buf[:n], data) {
		t.Fatalf("read while a file is in transit: %d bytes, %v", n, err)
	}
	delete(r.be.cache, f)
	os.WriteFile(path, old, 0o600) // and if it never comes, that is a rollback
	if _, err := r.Read(ino, 0, buf); !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("persistent rollback: got %v", err)
	}
}

// The reader's superblock identity included the whole stat, atime too: reading the
// superblock changed it, so every new epoch was loaded twice.
func TestSuperStampIgnoresAtime(t *testing.T) {
	dir := newBackend(t, 4, 4096, 1)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	before := r.superStamp()
	p := filepath.Join(dir, superName)
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, past.Add(time.Hour/2), time.Time{}); err != nil { // atime only
		t.Fatal(err)
	}
	if after := r.superStamp(); after != before {
		t.Fatalf("stamp changed with the atime:\n%s\n%s", before, after)
	}
}

// writeEpoch ignored the journal's fsync error and wrote the superblock anyway, so a
// machine crash could leave the backend committing changes the journal had lost.
func TestJournalFsyncFailureStopsEpoch(t *testing.T) {
	dir := newBackend(t, 8, 8192, 2)
	w, err := OpenWriter(dir, testPass, Options{StateDir: t.TempDir()}) // fsync on
	if err != nil {
		t.Fatal(err)
	}
	must(w.Mkdir(rootIno, "d", 0o755, 0, 0)) // metadata only: the epoch reads no journal data
	epoch := w.sb.Epoch
	w.j.f.Close() // the next fsync of the journal fails
	if _, err := w.Sync(); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("got %v, want a journal fsync error", err)
	}
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epoch() != epoch {
		t.Fatalf("superblock written (epoch %d -> %d) although the journal was not durable", epoch, r.Epoch())
	}
}

// An open file whose name is removed (unlink, or rename over it) stays readable and
// writable through the open handle until the last release, as POSIX wants; it used to
// fail with ENOENT at once. Its content never reaches readers.
func TestUnlinkWhileOpen(t *testing.T) {
	dir := newBackend(t, 16, 16<<10, 4)
	w := openW(t, dir, t.TempDir())
	defer w.Close()
	a := must(w.Create(rootIno, "scratch", 0o644, 0, 0))
	w.Hold(a.Ino)
	big := bytes.Repeat([]byte("0123456789"), 3000) // spans fragments, partly synced
	must(w.Write(a.Ino, 0, big))
	drain(t, w, 200)
	if err := w.Unlink(rootIno, "scratch"); err != nil {
		t.Fatal(err)
	}
	must(w.Write(a.Ino, int64(len(big)), []byte("more")))
	drain(t, w, 200)
	buf := make([]byte, len(big)+10)
	n, err := w.Read(a.Ino, 0, buf)
	if err != nil || string(buf[:n]) != string(big)+"more" {
		t.Fatalf("read after unlink: %d bytes, %v", n, err)
	}
	if at, err := w.GetAttr(a.Ino); err != nil || at.Size != uint64(len(big)+4) {
		t.Fatalf("getattr after unlink: %+v %v", at, err)
	}
	// Rename over an open file: the old content stays readable through its handle.
	b := must(w.Create(rootIno, "db", 0o644, 0, 0))
	w.Hold(b.Ino)
	must(w.Write(b.Ino, 0, []byte("old")))
	c := must(w.Create(rootIno, "db.tmp", 0o644, 0, 0))
	must(w.Write(c.Ino, 0, []byte("new")))
	if err := w.Rename(rootIno, "db.tmp", rootIno, "db", false); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Read(b.Ino, 0, buf); err != nil || string(buf[:n]) != "old" {
		t.Fatalf("replaced open file: %q %v", buf[:n], err)
	}
	w.Release(a.Ino)
	w.Release(b.Ino)
	if _, err := w.Read(a.Ino, 0, buf); !errors.Is(err, ErrNotExist) {
		t.Fatalf("after the last release: %v", err)
	}
	if _, err := w.Lookup(rootIno, "scratch"); !errors.Is(err, ErrNotExist) {
		t.Fatal("unlinked name still there")
	}
}
