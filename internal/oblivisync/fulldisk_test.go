package oblivisync

import (
	"bytes"
	"errors"
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
