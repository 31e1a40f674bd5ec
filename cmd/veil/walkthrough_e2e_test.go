package main

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

// End-to-end tests of what a session-13 user walkthrough found.

// A folder made as the parent of another (mkdir a/b, put --to a/b, mv x a/b) has no
// metadata of its own: ls -l showed it as "---------- 0 0001-01-01 00:00:00", a mode
// without the folder's "d" and a time two thousand years ago. It now shows it as a folder
// whose mode and time are unknown.
func TestE2ELsFolderWithoutMetadata(t *testing.T) {
	u := localUser(t, "alice")
	u.mustRun(t, "mkdir", "a/b")
	out := u.mustRun(t, "ls", "-l")
	if !strings.HasPrefix(out, "d") || strings.Contains(out, "0001-01-01") || !strings.HasSuffix(strings.TrimSpace(out), "a/") {
		t.Fatalf("ls -l of a parent folder mkdir made:\n%s", out)
	}
	if out := u.mustRun(t, "ls", "-l", "a"); !strings.HasPrefix(out, "drwxr-xr-x") {
		t.Fatalf("ls -l of the folder mkdir made itself:\n%s", out)
	}
}

// find matches exact names; a user who tried a pattern got only "nothing named ...", as if
// no such file were stored. The error now says why.
func TestE2EFindSaysItTakesOneExactName(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	randomFile(t, src+"/d/README.md", 10, 1)
	u.mustRun(t, "put", "-q", src+"/d")
	if out := u.mustRun(t, "find", "README.md"); strings.TrimSpace(out) != "d/README.md" {
		t.Fatalf("find README.md: %q", out)
	}
	if errs := u.mustFail(t, "find", "README*"); !strings.Contains(errs, "no patterns") {
		t.Fatalf("find with a pattern: %s", errs)
	}
}

// veil mount and veil osync mount refuse a mount point that holds files: FUSE 3 mounts
// over it, and a mistyped 'veil mount ~/Documents' hid the user's files until unmounted.
// Refused before FUSE is touched, so this runs without /dev/fuse.
func TestE2EMountRefusesNonEmptyFolder(t *testing.T) {
	u := localUser(t, "alice")
	full := t.TempDir()
	randomFile(t, filepath.Join(full, "keep.txt"), 10, 1)
	if errs := u.refuses(t, "mount", full); !strings.Contains(errs, "is not empty") {
		t.Fatalf("veil mount on a folder with a file: %s", errs)
	}
	be := filepath.Join(t.TempDir(), "be")
	u.mustRun(t, "osync", "init", "--backend", be, "--files", "16", "--file-size", "8192", "--kdf-memory", "8", "--kdf-time", "1")
	for _, args := range [][]string{{"osync", "mount", "--backend", be, full}, {"osync", "mount", "--read-only", "--backend", be, full}} {
		if errs := u.refuses(t, args...); !strings.Contains(errs, "is not empty") {
			t.Fatalf("veil %v on a folder with a file: %s", args, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(full, "keep.txt")); err != nil {
		t.Fatal(err)
	}
}

// refuses runs a command that must fail at once; one still running after 10 s (a mount
// that went ahead) is stopped with SIGINT, as Ctrl-C does, and fails the test.
func (u *user) refuses(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("veil %s succeeded, want an error", strings.Join(args, " "))
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("veil %s ran on instead of refusing (stopped with SIGINT)", strings.Join(args, " "))
	}
	return errb.String()
}

// 'timeout -s INT 5 veil put ...' delivers SIGINT twice within microseconds (to the
// command, then to its process group). The first cancelled the put; the second, taken as
// "Ctrl-C again: end at once", killed it (exit 130, no message; mid-write, a stale lock
// the next command had to take over) whenever the put was still busy a moment after the
// first: unlocking the key (argon2id) takes a few hundred milliseconds, and ignores
// cancellation. A second signal that follows the first this closely is the same
// interruption; one later still ends the process at once. The passphrase comes through a
// FIFO, so the signals go out once veil has read it (it then unlocks the key): sent 50 ms
// after the start, as before, under load they reached veil before it caught SIGINT at all,
// and killed it (a flaky test).
func TestE2EDoubledSignalIsOneInterruption(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f"), 1<<20, 1)
	pass, err := os.ReadFile(u.passFile)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "pass")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cmd := exec.Command(veilBin, "put", "-q", filepath.Join(src, "f"))
		cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+fifo)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		giveThroughFIFO(t, cmd, &errb, fifo, pass) // veil is unlocking the key
		cmd.Process.Signal(os.Interrupt)
		time.Sleep(20 * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted") {
			t.Fatalf("put given SIGINT twice 20 ms apart: %v, stderr %q; want exit 130 and \"interrupted\"", err, errb.String())
		}
	}
}

// giveThroughFIFO writes data into the FIFO at path once cmd has opened it to read (so cmd
// is running its main), failing the test (with cmd's stderr) if it does not within 30 s.
func giveThroughFIFO(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, path string, data []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Non-blocking: ENXIO until a reader has the FIFO open.
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			_, err = f.Write(data)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		if !errors.Is(err, syscall.ENXIO) || time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s not opened for reading within 30 s: %v; stderr %q", path, err, stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
