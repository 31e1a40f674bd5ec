package oblivisync

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBackendDiskFull: a backend's files start sparse, so one on a disk smaller than N*B
// fills it epochs after init. The epoch fails with ENOSPC and an error that says what is
// full and what to do; nothing is lost: with space freed, the same state directory syncs
// everything and the data reads back.
func TestBackendDiskFull(t *testing.T) {
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("needs a small file system (mount -t tmpfs, root): %s", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", disk).Run() })
	dir, state := filepath.Join(disk, "be"), t.TempDir()
	if err := Init(dir, testPass, Params{Files: 64, FileSize: 64 << 10, K: 3, DripTime: 10 * time.Millisecond}, testKDF); err != nil {
		t.Fatal(err)
	}
	w := openW(t, dir, state)
	f := must(w.Create(rootIno, "big", 0o600, 0, 0))
	data := bytes.Repeat([]byte("0123456789abcdef"), 96<<10) // 1.5 MiB
	must(w.Write(f.Ino, 0, data))
	var err error
	for i := 0; i < 200 && err == nil; i++ {
		_, err = w.Sync()
	}
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "A disk is full: the backend "+dir+" takes 4.0 MiB") ||
		!strings.Contains(err.Error(), "every change stays in the journal") {
		t.Fatalf("epochs on a full disk: %v; want ENOSPC explained", err)
	}
	w.Close()
	if out, err := exec.Command("mount", "-o", "remount,size=8m", disk).CombinedOutput(); err != nil {
		t.Fatalf("grow the file system: %s %v", out, err)
	}
	w = openW(t, dir, state)
	defer w.Close()
	drain(t, w, 200)
	r, err := OpenReader(dir, testPass)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data)+1)
	if n, err := r.Read(f.Ino, 0, got); err != nil || !bytes.Equal(got[:n], data) {
		t.Fatalf("after freeing space: read %d bytes, %v; want the file as written", n, err)
	}
}

// TestBackendFolderGone: the backend's folder disappears under a running writer (a share
// unmounted, a sync client that moved it). The epoch fails saying so and where the
// changes are; nothing is lost: once the folder is back the same state syncs them.
func TestBackendFolderGone(t *testing.T) {
	dir, state := newBackend(t, 8, 16<<10, 2), t.TempDir()
	w := openW(t, dir, state)
	drain(t, w, 10)
	f := must(w.Create(rootIno, "kept", 0o600, 0, 0))
	must(w.Write(f.Ino, 0, []byte("written while the folder was away")))
	away := dir + ".away"
	if err := os.Rename(dir, away); err != nil {
		t.Fatal(err)
	}
	_, err := w.Sync()
	if err == nil || !strings.Contains(err.Error(), "the backend folder "+dir+" is gone") || !strings.Contains(err.Error(), "Every change stays in the journal "+state) {
		t.Fatalf("epoch with the backend folder gone: %v", err)
	}
	w.Close()
	if err := os.Rename(away, dir); err != nil {
		t.Fatal(err)
	}
	w = openW(t, dir, state)
	defer w.Close()
	drain(t, w, 50)
	r := must(OpenReader(dir, testPass))
	buf := make([]byte, 64)
	if n, err := r.Read(f.Ino, 0, buf); err != nil || string(buf[:n]) != "written while the folder was away" {
		t.Fatalf("after the folder came back: %q %v", buf[:n], err)
	}
}
