package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestOsyncMountSaysWhatItDoes: 'veil osync mount' says once it is mounted (it printed
// nothing, unlike 'veil mount'), and after Ctrl-C, when changes are still pending, that it
// is syncing them before it exits (it was silent for up to --drain-timeout, a minute by
// default, and looked hung); then it exits 0 with everything synced.
func TestOsyncMountSaysWhatItDoes(t *testing.T) {
	dir := t.TempDir()
	be, mnt, state := filepath.Join(dir, "be"), filepath.Join(dir, "mnt"), filepath.Join(dir, "state")
	pf := filepath.Join(dir, "pass")
	os.WriteFile(pf, []byte("cli test\n"), 0o600)
	os.Mkdir(mnt, 0o700)
	if out, err := execVeil("osync", "init", "--backend", be, "--files", "32", "--file-size", "65536", "--drip-time", "300ms",
		"--kdf-memory", "8", "--kdf-time", "1", "--password-file", pf); err != nil {
		t.Fatalf("init: %s %v", out, err)
	}
	p := testutil.Start(t, veilBin, "osync", "mount", "--backend", be, "--state", state, "--password-file", pf, mnt)
	t.Cleanup(func() { execCommand("fusermount3", "-u", mnt) })
	testutil.WaitFor(t, 30*time.Second, "the mounted line", func() bool {
		return strings.Contains(p.Output(), "mounted "+be+" at "+mnt+" (read-write")
	})
	// About six epochs' worth (k = 3 files of two 32 KiB blocks each per epoch).
	data := bytes.Repeat([]byte("oblivious "), 60_000)
	if err := os.WriteFile(filepath.Join(mnt, "f.txt"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	p.Cmd.Process.Signal(syscall.SIGINT)
	testutil.WaitFor(t, 10*time.Second, "the draining line", func() bool {
		return strings.Contains(p.Output(), "unmounted "+mnt+"; syncing ")
	})
	select {
	case <-p.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the mount did not exit within 60 s of Ctrl-C")
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after a drained unmount, want 0: %s", code, p.Output())
	}
	out, err := execVeil("osync", "status", "--backend", be, "--state", state, "--password-file", pf)
	if err != nil || !strings.Contains(string(out), "0 B pending") {
		t.Fatalf("status after the drain: %s %v", out, err)
	}
}

// TestOsyncInitWarnsSmallDisk: the backend's files start sparse, so init on a disk that
// cannot hold N*B succeeded silently and the writer stopped with ENOSPC epochs later.
// init now warns (and still creates the backend: a disk can be grown).
func TestOsyncInitWarnsSmallDisk(t *testing.T) {
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("needs a small file system (mount -t tmpfs, root): %s", strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", disk).Run() })
	pf := filepath.Join(t.TempDir(), "pass")
	os.WriteFile(pf, []byte("cli test\n"), 0o600)
	mk := func(be, files string) string {
		out, err := execVeil("osync", "init", "--backend", filepath.Join(disk, be), "--files", files, "--file-size", "65536",
			"--kdf-memory", "8", "--kdf-time", "1", "--password-file", pf)
		if err != nil {
			t.Fatalf("init: %s %v", out, err)
		}
		return string(out)
	}
	if out := mk("small", "8"); strings.Contains(out, "warning") { // 512 KiB fits
		t.Fatalf("init of a backend that fits warned: %s", out)
	}
	if out := mk("large", "64"); !strings.Contains(out, "warning: "+filepath.Join(disk, "large")+" has ") || !strings.Contains(out, "the backend takes 4.0 MiB") {
		t.Fatalf("init of a 4 MiB backend on a 1 MiB disk: %s", out)
	}
}
