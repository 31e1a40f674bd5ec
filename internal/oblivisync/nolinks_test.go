package oblivisync

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// A backend folder on a file system without hard links (a vfat or exFAT USB disk, many
// network and FUSE file systems) works: the lease and other objects created exclusively
// were linked into place, and opening a writer failed with "operation not permitted"
// (found by the session 17 review of the local backend's hard links). They are now
// renamed without replacing there (atomicfile.PlaceNew); a second writer is still refused.
func TestBackendWithoutHardLinks(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "mnt")
	testutil.MountWithoutHardLinks(t, t.TempDir(), mnt)
	dir := filepath.Join(mnt, "backend")
	if err := Init(dir, testPass, Params{Files: 16, FileSize: 16 << 10, K: 3, DripTime: 10 * time.Millisecond}, testKDF); err != nil {
		t.Fatal(err)
	}
	w := openW(t, dir, t.TempDir())
	ino := must(w.Create(rootIno, "f", 0o644, 0, 0)).Ino
	if _, err := w.Write(ino, 0, []byte("on a disk without hard links")); err != nil {
		t.Fatal(err)
	}
	drain(t, w, 50)
	if _, err := OpenWriter(dir, testPass, Options{StateDir: t.TempDir(), UnsafeNoFsync: true}); err == nil {
		t.Fatal("a second writer opened while the first holds the lease")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r := openW(t, dir, t.TempDir())
	defer r.Close()
	got := make([]byte, 64)
	n, err := r.Read(must(r.Lookup(rootIno, "f")).Ino, 0, got)
	if err != nil || string(got[:n]) != "on a disk without hard links" {
		t.Fatalf("read back: %q, %v", got[:n], err)
	}
}
