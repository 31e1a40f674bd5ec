package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// veil mount through the real binary, servers and FUSE: current/ is the newest tree,
// snapshots/<time>/ each snapshot; nothing is writable; a tampered chunk is an I/O error,
// never unverified bytes; SIGTERM unmounts and exits 0.
func TestE2EMount(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testutil.Missing(t, "/dev/fuse not available")
	}
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	f := filepath.Join(src, "notes.txt")
	v1 := randomFile(t, f, 300<<10, 1)
	victim := randomFile(t, filepath.Join(src, "sub", "victim.bin"), 700<<10, 2)
	os.Symlink("notes.txt", filepath.Join(src, "link"))
	alice.mustRun(t, "put", src)
	v2 := randomFile(t, f, 1500<<10, 3)
	os.Chtimes(f, time.Now(), time.Now().Add(time.Minute))
	alice.mustRun(t, "put", src)

	mnt := t.TempDir()
	p := alice.mount(t, mnt, "mounted 2 snapshots")

	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(mnt, p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(read("current/docs/notes.txt"), v2) {
		t.Fatal("current/docs/notes.txt is not the newest version")
	}
	ents, err := os.ReadDir(filepath.Join(mnt, "snapshots"))
	if err != nil || len(ents) != 2 {
		t.Fatalf("snapshots/: %v %v", ents, err)
	}
	names := []string{ents[0].Name(), ents[1].Name()}
	sort.Strings(names)
	if !bytes.Equal(read("snapshots/"+names[0]+"/docs/notes.txt"), v1) {
		t.Fatal("the first snapshot does not hold the first version")
	}
	if target, err := os.Readlink(filepath.Join(mnt, "current/docs/link")); err != nil || target != "notes.txt" {
		t.Fatalf("readlink: %q %v", target, err)
	}
	fi, err := os.Stat(filepath.Join(mnt, "current/docs/notes.txt"))
	if err != nil || fi.Size() != int64(len(v2)) || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("stat: %v %v", fi, err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "current/docs/new.txt"), []byte("x"), 0o644); err == nil {
		t.Fatal("wrote into a read-only mount")
	}
	// Tamper the victim's chunk on the storage service before anything read it.
	var blob string
	filepath.Walk(filepath.Join(d.dir, "store", "blobs"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 600<<10 && fi.Size() < 800<<10 {
			blob = p
		}
		return nil
	})
	b, _ := os.ReadFile(blob)
	b[len(b)/2] ^= 1
	os.WriteFile(blob, b, 0o600)
	if got, err := os.ReadFile(filepath.Join(mnt, "current/docs/sub/victim.bin")); !errors.Is(err, syscall.EIO) || bytes.Equal(got, victim) {
		t.Fatalf("read of a tampered file: %d bytes, %v; want EIO", len(got), err)
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("veil mount did not exit on SIGTERM")
	}
	if code := p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("veil mount exited %d:\n%s", code, p.Output())
	}
	if _, err := os.Stat(filepath.Join(mnt, "current")); err == nil {
		t.Fatal("still mounted after SIGTERM")
	}
}

func execCommand(name string, args ...string) { _ = exec.Command(name, args...).Run() }

// --read-timeout bounds each request of the kernel: with the storage service stopped
// (SIGSTOP: it accepts connections and never answers), a read fails with EIO once the
// timeout has passed, not after the 90 s default; the mount serves on, and a value that
// is not a duration of at least 1s is a usage error before anything is mounted.
func TestE2EMountReadTimeout(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testutil.Missing(t, "/dev/fuse not available")
	}
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	want := randomFile(t, filepath.Join(src, "a.bin"), 300<<10, 1)
	wantB := randomFile(t, filepath.Join(src, "b.bin"), 300<<10, 2)
	alice.mustRun(t, "put", src)
	mnt := t.TempDir()
	alice.mountRefuses(t, mnt, "--read-timeout", "0s", "500ms", "-5s", "5")

	p := alice.mount(t, mnt, "mounted 1 snapshot", "--read-timeout", "2s")
	if b, err := os.ReadFile(filepath.Join(mnt, "current/docs/a.bin")); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("read with the service up: %d bytes, %v", len(b), err)
	}

	d.proc.Cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() { d.proc.Cmd.Process.Signal(syscall.SIGCONT) })
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := os.ReadFile(filepath.Join(mnt, "current/docs/b.bin")); done <- err }()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, syscall.EIO) || took < 2*time.Second {
			t.Fatalf("read with the service stopped: %v after %v, want EIO after 2s", err, took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("read with the service stopped still waiting after 30s (--read-timeout 2s)")
	}
	d.proc.Cmd.Process.Signal(syscall.SIGCONT)
	if b, err := os.ReadFile(filepath.Join(mnt, "current/docs/b.bin")); err != nil || !bytes.Equal(b, wantB) {
		t.Fatalf("read once the service is back: %d bytes, %v", len(b), err)
	}
	if !strings.Contains(p.Output(), "\nwarning: veil mount: read failed: ") || strings.Contains(p.Output(), "level=WARN") {
		t.Errorf("the mount did not say the read failed in a plain warning line:\n%s", p.Output())
	}
}

// A put while mounted (from the same profile, a second process) shows in current/ and
// snapshots/ without mounting again (--refresh 1s): the changed file reads its new
// content, the removed one is gone, while a file open before keeps its version. A
// --refresh that is not 0 nor a duration of at least 1s is a usage error.
func TestE2EMountFollowsPut(t *testing.T) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testutil.Missing(t, "/dev/fuse not available")
	}
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("first"), 0o644)
	os.WriteFile(filepath.Join(src, "old.txt"), []byte("old"), 0o644)
	alice.mustRun(t, "put", src)
	mnt := t.TempDir()
	alice.mountRefuses(t, mnt, "--refresh", "500ms", "-5s", "5")

	alice.mount(t, mnt, "mounted 1 snapshot", "--refresh", "1s")
	notes := filepath.Join(mnt, "current/docs/notes.txt")
	open, err := os.Open(notes)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	os.WriteFile(filepath.Join(src, "notes.txt"), []byte("second"), 0o644)
	alice.mustRun(t, "put", src)
	alice.mustRun(t, "rm", "docs/old.txt")
	testutil.WaitFor(t, 30*time.Second, "current/ showing the put and the rm", func() bool {
		b, _ := os.ReadFile(notes)
		_, err := os.Stat(filepath.Join(mnt, "current/docs/old.txt"))
		return string(b) == "second" && errors.Is(err, os.ErrNotExist)
	})
	b := make([]byte, 16)
	if n, _ := open.ReadAt(b, 0); string(b[:n]) != "first" {
		t.Errorf("a file open before the put reads %q, want %q", b[:n], "first")
	}
	if es, err := os.ReadDir(filepath.Join(mnt, "snapshots")); err != nil || len(es) != 3 {
		t.Errorf("snapshots/ after a put and an rm while mounted: %d, %v; want 3", len(es), err)
	}
}

// mount starts 'veil mount' of u on mnt with flags, waits until it prints ready (its
// "mounted N snapshots" line), and unmounts it when the test ends.
func (u *user) mount(t *testing.T, mnt, ready string, flags ...string) *testutil.Process {
	t.Helper()
	t.Setenv("VEIL_CONFIG", u.config)
	t.Setenv("VEIL_PASSWORD_FILE", u.passFile)
	p := testutil.Start(t, veilBin, append(append([]string{"mount"}, flags...), mnt)...)
	testutil.WaitFor(t, 30*time.Second, "mount ready", func() bool { return strings.Contains(p.Output(), ready) })
	t.Cleanup(func() { execCommand("fusermount3", "-u", mnt) })
	return p
}

// mountRefuses checks that 'veil mount FLAG VALUE' is a usage error of one line naming
// the flag, for each bad value.
func (u *user) mountRefuses(t *testing.T, mnt, flag string, bad ...string) {
	t.Helper()
	for _, v := range bad {
		_, errs, code := u.run(t, "mount", flag, v, mnt)
		if code != exitUsage || !strings.Contains(errs, flag) || strings.Count(errs, "\n") != 2 {
			t.Errorf("mount %s %s: exit %d, stderr %q", flag, v, code, errs)
		}
	}
}
