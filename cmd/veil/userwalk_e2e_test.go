package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Faults found by session 16's user walkthrough (a new user comparing veil with restic,
// age and rclone), each pinned end to end on the built binary.

// holdLock plants the lock of a command another host runs (exclusive, fresh) on the local
// storage directory store, as a prune running elsewhere holds it.
func holdLock(t *testing.T, store string) {
	t.Helper()
	dir := filepath.Join(store, ".veil", "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("exclusive-%d-0011223344556677-8899aabbccddeeff-1", time.Now().Unix())
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A sync that cannot take its lock did nothing: one line and exit 1, as put and rm say it,
// not "stored 0 files, ..." and exit 3 ("some items failed, the rest went through").
func TestE2ESyncLockedFailsAsAWhole(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	u.run(t, "put", "-q", src)
	holdLock(t, store)
	for _, json := range []bool{false, true} {
		args := []string{"sync", src}
		if json {
			args = append(args, "--json")
		}
		out, errs, code := u.run(t, args...)
		want := "veil: another veil command holds a conflicting lock"
		if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 {
			t.Fatalf("veil %v: exit %d, stderr %q; want exit 1 and one line %q...", args, code, errs, want)
		}
		if !json && out != "" {
			t.Fatalf("veil %v printed %q; want no summary of a sync that did nothing", args, out)
		}
		if json && (strings.Count(out, "\n") != 1 || !strings.Contains(out, `"exit_code":1}`)) {
			t.Fatalf("veil %v printed %q; want only the error object, exit_code 1", args, out)
		}
	}
}

// smallDisk mounts a tmpfs of size bytes for the test (a disk that fills up), or skips
// the test where this process may not mount one (not root, no tmpfs).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// A get onto a disk that fills up stops at the first file without room, in one line that
// says where, how far it got and what to do, instead of a line per remaining file (419 of
// them for /usr/share/doc/git onto 2 MiB), each fetched first; it leaves no temporary file.
func TestE2EGetStopsOnFullDisk(t *testing.T) {
	disk := smallDisk(t, 1<<20)
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	for i := range 40 {
		randomFile(t, filepath.Join(src, fmt.Sprintf("f%02d.bin", i)), 100_000, byte(i))
	}
	u.mustRun(t, "put", "-q", src)
	_, errs, code := u.run(t, "get", "-j", "1", "docs", filepath.Join(disk, "docs"))
	want := "veil: get stopped: no space left on device writing docs/f"
	if code != 1 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 1 ||
		!strings.Contains(errs, "files retrieved: make room, then run the same get again") {
		t.Fatalf("get onto a full disk: exit %d, stderr:\n%s\nwant exit 1 and one line %q...", code, errs, want)
	}
	filepath.WalkDir(disk, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".veil-get") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

// A command's warnings are plain lines, "warning: ...", as veil's others; not log records
// ("time=... level=WARN msg=..."); -v keeps the log records.
func TestE2EWarningsArePlainLines(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	cache := filepath.Join(u.config, "cache")
	os.RemoveAll(cache)
	os.WriteFile(cache, []byte("not a folder"), 0o600) // the put cache can be neither read nor saved
	_, errs, code := u.run(t, "put", "-q", src)
	want := "warning: put cache not saved (the next put reads records): mkdir " + cache + ": not a directory (file " + cache + "/"
	if code != 0 || !strings.Contains(errs, "\n"+want) {
		t.Fatalf("put: exit %d, stderr:\n%s\nwant a line %q...", code, errs, want)
	}
	for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
		if !strings.HasPrefix(l, "warning: ") {
			t.Fatalf("stderr line %q is not a plain warning", l)
		}
	}
	if _, errs, _ := u.run(t, "put", "-q", "-v", src); !strings.Contains(errs, `level=WARN msg="put cache not saved`) {
		t.Fatalf("put -v: stderr:\n%s\nwant the log records", errs)
	}
}

// 'veil rm ""' names no path before its reason: "veil: refusing to remove the root", not
// "veil: : refusing ...".
func TestE2ERemoveEmptyPathMessage(t *testing.T) {
	u := localUser(t, "alice")
	_, errs, code := u.run(t, "rm", "")
	if want := "veil: refusing to remove the root; remove its entries one by one\n"; code != 1 || errs != want {
		t.Fatalf("rm \"\": exit %d, stderr %q; want exit 1, %q", code, errs, want)
	}
}

// check --read-data shows a progress bar on a terminal while it reads content, as put and
// get do (it said nothing until it was done, however long it ran); without a terminal it
// prints none. The terminal is script(1)'s.
func TestE2ECheckReadDataProgress(t *testing.T) {
	u := localUser(t, "alice")
	cmd := u.onTerminal(t, "check --read-data")
	u.mustRun(t, "put", "-q", randomDocs(t, 1<<20))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "verifying") || !strings.Contains(string(out), "no damage") {
		t.Fatalf("check --read-data on a terminal: %v\n%q\nwant a progress bar (verifying ...) and the result", err, out)
	}
	if _, errs, code := u.run(t, "check", "--read-data"); code != 0 || errs != "" {
		t.Fatalf("check --read-data without a terminal: exit %d, stderr %q; want no progress", code, errs)
	}
}

// 'veil put .. --to DEST', from a subfolder, stores the parent folder's contents into DEST,
// as 'veil put .' stores the current one's; it failed every file with 'invalid name: ".."'.
func TestE2EPutDotDot(t *testing.T) {
	u := localUser(t, "alice")
	top := t.TempDir()
	randomFile(t, filepath.Join(top, "a.txt"), 10, 1)
	randomFile(t, filepath.Join(top, "sub", "b.txt"), 10, 2)
	u.cwd = filepath.Join(top, "sub")
	_, errs, code := u.run(t, "put", "-q", "..", "--to", "up")
	if code != 0 || errs != "" {
		t.Fatalf("put .. --to up: exit %d, stderr %q", code, errs)
	}
	if out := u.mustRun(t, "ls", "up"); out != "a.txt\nsub/\n" {
		t.Fatalf("ls up: %q, want the parent folder's entries", out)
	}
}

// A --keep option of forget given a negative value is a usage mistake that names it, not
// "forget needs a policy" (alone) or nothing at all (beside another option, where it was
// taken for "not given").
func TestE2EForgetNegativeKeep(t *testing.T) {
	u := localUser(t, "alice")
	for _, c := range []struct{ args, want string }{
		{"--keep-last -1", "veil: --keep-last -1: give a number of snapshots, at least 1\n"},
		{"--keep-daily 7 --keep-weekly -2", "veil: --keep-weekly -2: give a number of snapshots, at least 1\n"},
		{"--keep-within -5h", "veil: --keep-within -5h0m0s: give a positive duration, such as 720h\n"},
	} {
		_, errs, code := u.run(t, append([]string{"forget", "--dry-run"}, strings.Fields(c.args)...)...)
		if code != 2 || errs != c.want+forgetUsage {
			t.Errorf("forget %s: exit %d, stderr %q; want exit 2, %q", c.args, code, errs, c.want)
		}
	}
}

// With the storage service down, an error names the user's path and the service's
// address, not the encrypted name of the object it was asking for ("get
// 1qJ7yENII1Rpyn.../dL5jvNjO0dm4QJEj.key: 127.0.0.1:7480: connection refused").
func TestE2EServiceDownNamesNoObject(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	u.mustRun(t, "put", "-q", src)
	d.proc.Kill()
	<-d.proc.Done()
	for _, args := range [][]string{{"ls", "docs"}, {"get", "docs/a.txt", filepath.Join(t.TempDir(), "a.txt")}, {"mkdir", "new"}, {"put", src}, {"snapshots"}} {
		_, errs, code := u.run(t, args...)
		// The first contact says what is wrong in a user's words, and what to do (it read
		// "veil: key check: 127.0.0.1:7480: connection refused (...)").
		want := "veil: the storage service at " + d.storeAddr + " does not answer (connection refused): start it, or check the storage location in your profile\n"
		if code != 1 || errs != want {
			t.Errorf("veil %v with the service down: exit %d, stderr %q; want exit 1 and %q, naming no stored object", args, code, errs, want)
		}
	}
}

// onTerminal is a command running veil with args (one shell line) on a terminal, script(1)'s,
// with env added to the test's; the test is skipped where script(1) is missing.
func onTerminal(t *testing.T, args string, env ...string) *exec.Cmd {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give veil a terminal")
	}
	cmd := exec.Command(scriptBin, "-qec", veilBin+" "+args, "/dev/null")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// onTerminal is onTerminal as u (its profile and passphrase file).
func (u *user) onTerminal(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	return onTerminal(t, args, "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile)
}

// randomDocs is a folder "docs" of eight files of size random bytes each.
func randomDocs(t *testing.T, size int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "docs")
	for i := range 8 {
		randomFile(t, filepath.Join(src, fmt.Sprintf("f%d.bin", i)), size, byte(i))
	}
	return src
}
