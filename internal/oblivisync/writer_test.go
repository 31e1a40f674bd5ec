package oblivisync

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The writer: where its state lives, what it leaves in the backend folder, and when it stops.

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
	dir := newBackend(t, 249, 4096, 4) // leaves room for about one page in the superblock
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

// writeEpoch ignored the journal's fsync error and wrote the superblock anyway, so a
// machine crash could leave the backend committing changes the journal had lost. The
// failure also stays: a later fsync of the journal (Flush) may succeed although the
// records are lost, so it fails too (TestJournalFsyncFailureIsSticky).
func TestJournalFsyncFailureStopsEpoch(t *testing.T) {
	dir := newBackend(t, 8, 8192, 2)
	w, err := OpenWriter(dir, testPass, Options{StateDir: t.TempDir()}) // fsync on
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	must(w.Mkdir(rootIno, "d", 0o755, 0, 0)) // metadata only: the epoch reads no journal data
	epoch := w.sb.Epoch
	fail := true // the next fsync of the journal fails; a retry would succeed
	w.j.syncFile = func(f *os.File) error {
		if fail {
			fail = false
			return errors.New("injected fsync failure")
		}
		return f.Sync()
	}
	if _, err := w.Sync(); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("got %v, want a journal fsync error", err)
	}
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "journal fsync") {
		t.Fatalf("flush after the epoch's journal fsync failed: got %v, want the fsync error", err)
	}
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epoch() != epoch {
		t.Fatalf("superblock written (epoch %d -> %d) although the journal was not durable", epoch, r.Epoch())
	}
}
