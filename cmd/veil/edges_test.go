package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// End-to-end tests of issue 15's sharp edges: each runs the built binary against a local
// storage directory (no servers needed: random keys, the same client code paths).

// localUser is a user whose profile stores in a local directory without a key server.
func localUser(t *testing.T, name string) *user {
	t.Helper()
	return newUser(t, name, "--storage", filepath.Join(t.TempDir(), "store"), "--no-keyserver")
}

// mustFail runs veil, wants a non-zero exit, and returns stderr.
func (u *user) mustFail(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := u.run(t, args...)
	if code == 0 {
		t.Fatalf("veil %s succeeded, want an error\nstdout: %s", strings.Join(args, " "), out)
	}
	return errs
}

func TestE2ECatAndGetToStdout(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	want := randomFile(t, filepath.Join(src, "d", "f.bin"), 300_000, 1)
	u.mustRun(t, "put", "-q", filepath.Join(src, "d"))
	if got := u.mustRun(t, "cat", "d/f.bin"); !bytes.Equal([]byte(got), want) {
		t.Fatalf("cat: %d bytes, want %d", len(got), len(want))
	}
	if got := u.mustRun(t, "get", "d/f.bin", "-"); !bytes.Equal([]byte(got), want) {
		t.Fatalf("get -: %d bytes, want %d", len(got), len(want))
	}
	if errs := u.mustFail(t, "cat", "d"); !strings.Contains(errs, "is a directory") {
		t.Fatalf("cat of a directory: %s", errs)
	}
	if errs := u.mustFail(t, "cat", "nothing"); !strings.Contains(errs, "nothing") {
		t.Fatalf("cat of a missing file: %s", errs)
	}
}

// An existing symlink, FIFO or device named as DEST is never replaced nor written through
// (run as root, get used to replace the /dev/stdout link with a regular file).
func TestE2EGetNeverReplacesNonRegularDest(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f.bin"), 1000, 2)
	u.mustRun(t, "put", "-q", filepath.Join(src, "f.bin"))
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	link := filepath.Join(dir, "link")
	os.Symlink(victim, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dest := range []string{link, fifo, "/dev/null"} {
		errs := u.mustFail(t, "get", "f.bin", dest)
		if strings.Count(errs, "\n") != 1 {
			t.Errorf("get f.bin %s: want one line, got %q", dest, errs)
		}
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("written through the symlink: %q", b)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi.Mode(), err)
	}
}

// restic's restore rules: --overwrite always|if-changed|never, no nesting for get x x,
// no writing through a symlink found in the target.
func TestE2EGetOverwriteAndNoNesting(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "x")
	randomFile(t, filepath.Join(src, "a.bin"), 1000, 3)
	randomFile(t, filepath.Join(src, "sub", "b.bin"), 1000, 4)
	u.mustRun(t, "put", "-q", src)

	work := t.TempDir()
	local := filepath.Join(work, "x")
	u.mustRun(t, "get", "-q", "x", local)
	diffTrees(t, src, local)
	// get x x again: updates x, no x/x
	u.mustRun(t, "get", "-q", "x", local)
	if _, err := os.Lstat(filepath.Join(local, "x")); err == nil {
		t.Fatal("get x x nested x/x")
	}
	// never: a locally changed file stays
	os.WriteFile(filepath.Join(local, "a.bin"), []byte("local edit"), 0o644)
	s := u.summary(t, "get", "--overwrite", "never", "x", local)
	if b, _ := os.ReadFile(filepath.Join(local, "a.bin")); string(b) != "local edit" || s["kept"].(float64) != 2 {
		t.Fatalf("--overwrite never: a.bin %q, summary %v", b, s)
	}
	// if-changed: only the changed file is rewritten
	s = u.summary(t, "get", "--overwrite", "if-changed", "x", local)
	if s["kept"].(float64) != 1 || s["files"].(float64) != 1 {
		t.Fatalf("--overwrite if-changed: %v", s)
	}
	diffTrees(t, src, local)
	if errs := u.mustFail(t, "get", "--overwrite", "sometimes", "x", local); !strings.Contains(errs, "if-changed") {
		t.Fatalf("bad --overwrite: %s", errs)
	}
	// A symlink where a stored directory goes is not followed: nothing lands outside.
	outside := t.TempDir()
	os.RemoveAll(filepath.Join(local, "sub"))
	os.Symlink(outside, filepath.Join(local, "sub"))
	u.run(t, "get", "-q", "x", local)
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Fatalf("get wrote through a symlink in the target: %v", es)
	}
	// A symlink where a stored file goes is replaced, not followed.
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("keep me"), 0o644)
	os.Remove(filepath.Join(local, "a.bin"))
	os.Symlink(victim, filepath.Join(local, "a.bin"))
	u.run(t, "get", "-q", "x", local)
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("written through a symlink: %q", b)
	}
	sameFile(t, filepath.Join(src, "a.bin"), filepath.Join(local, "a.bin"))
	// A file asked into an existing folder goes into it.
	into := t.TempDir()
	u.mustRun(t, "get", "-q", "x/a.bin", into)
	sameFile(t, filepath.Join(src, "a.bin"), filepath.Join(into, "a.bin"))
}

// A stored file and a stored folder never share a name (put X --to FILE made one, and rm
// -r NAME/ then deleted the file).
func TestE2EFileAndFolderNeverShareAName(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f.txt"), 100, 5)
	randomFile(t, filepath.Join(src, "y"), 100, 6)
	u.mustRun(t, "put", "-q", filepath.Join(src, "f.txt"))
	if errs := u.mustFail(t, "put", "-q", filepath.Join(src, "y"), "--to", "f.txt"); !strings.Contains(errs, "f.txt is a stored file") {
		t.Fatalf("put --to FILE: %s", errs)
	}
	u.mustFail(t, "mkdir", "f.txt/sub")
	u.mustFail(t, "mkdir", "f.txt")
	if errs := u.mustFail(t, "rm", "-r", "f.txt/"); !strings.Contains(errs, "not a folder") {
		t.Fatalf("rm -r FILE/: %s", errs)
	}
	u.mustRun(t, "get", "-q", "/", t.TempDir())
	if ls := u.mustRun(t, "ls"); ls != "f.txt\n" {
		t.Fatalf("ls = %q", ls)
	}
}

// cp's rule: a destination named as the last argument must exist; --to creates it.
func TestE2EPutMissingDestination(t *testing.T) {
	u := localUser(t, "alice")
	src := t.TempDir()
	a, b := filepath.Join(src, "a"), filepath.Join(src, "b")
	randomFile(t, a, 100, 7)
	randomFile(t, b, 100, 8)
	errs := u.mustFail(t, "put", "-q", a, b, "typo")
	if !strings.Contains(errs, "typo does not exist in storage") || !strings.Contains(errs, "--to typo") {
		t.Fatalf("put a b typo: %s", errs)
	}
	if ls := u.mustRun(t, "ls"); ls != "" {
		t.Fatalf("put a b typo stored something: %q", ls)
	}
	// The destination as typed, and no advice to mkdir a stored file (found by a user
	// walkthrough: "/typo" was "typo", the file was to be created with 'veil mkdir').
	if errs := u.mustFail(t, "put", "-q", a, "/typo"); errs != "veil: /typo does not exist in storage: as the last argument, the destination "+
		"must be an existing folder (create it with --to /typo, or 'veil mkdir /typo')\n" {
		t.Fatalf("put a /typo: %q", errs)
	}
	u.mustRun(t, "put", "-q", a, "--to", "new")
	if errs := u.mustFail(t, "put", "-q", b, "/new/a"); errs != "veil: /new/a is a stored file: as the last argument, the destination must be an existing folder\n" {
		t.Fatalf("put b /new/a: %q", errs)
	}
	u.mustRun(t, "put", "-q", b, "new")
	if ls := u.mustRun(t, "ls", "new"); ls != "a\nb\n" {
		t.Fatalf("ls new = %q", ls)
	}
	u.mustFail(t, "put", "-q", a, "new/a") // a stored file is no destination folder
}

// runIn runs veil as u in the working directory dir with extra environment variables.
func (u *user) runIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(veilBin, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// A mistyped storage location never becomes a new empty store, and init checks that a
// veil:// service answers before it writes a profile.
func TestE2EMistypedStorageLocation(t *testing.T) {
	u := localUser(t, "alice")
	cwd := t.TempDir()
	_, errs, code := u.runIn(t, cwd, []string{"VEIL_STORAGE=blah"}, "ls")
	if code == 0 || !strings.Contains(errs, "blah") || !strings.Contains(errs, "does not exist") {
		t.Fatalf("VEIL_STORAGE=blah veil ls: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(cwd, "blah")); err == nil {
		t.Fatal("a mistyped VEIL_STORAGE created a store")
	}

	storeDir := t.TempDir()
	if out, err := execVeil("store", "init", "--dir", storeDir); err != nil {
		t.Fatalf("store init: %v %s", err, out)
	}
	cred := filepath.Join(storeDir, "bob.cred")
	port := testutil.FreePort(t) // nothing listens there
	if out, err := execVeil("store", "user", "add", "bob", "--dir", storeDir, "--out", cred,
		"--endpoint", "https://"+testutil.Addr(port)); err != nil {
		t.Fatalf("user add: %v %s", err, out)
	}
	bob := &user{name: "bob", config: filepath.Join(t.TempDir(), "profile"), passFile: u.passFile}
	_, errs, code = bob.run(t, "init", "--storage", "veil://"+testutil.Addr(port), "--store-credential", cred, "--no-keyserver")
	if code == 0 || !strings.Contains(errs, "does not answer") {
		t.Fatalf("init against a service that is down: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(bob.config); err == nil {
		t.Fatal("a failed init left a profile")
	}
}

// Scripting: a put that lost deduplication exits 4 even with -q and says so in JSON;
// ls --json is complete without -l and shows Unix modes; mkdir/mv/rm --json print.
func TestE2EScriptingOutput(t *testing.T) {
	// A key server credential whose server is not there: every file falls back.
	ksDir := t.TempDir()
	if out, err := execVeil("keyserver", "init", "--dir", ksDir, "--url", "https://"+testutil.Addr(testutil.FreePort(t))); err != nil {
		t.Fatalf("keyserver init: %v %s", err, out)
	}
	cred := filepath.Join(ksDir, "alice.json")
	if out, err := execVeil("keyserver", "client", "add", "alice", "--dir", ksDir, "--out", cred); err != nil {
		t.Fatalf("client add: %v %s", err, out)
	}
	u := newUser(t, "alice", "--storage", filepath.Join(t.TempDir(), "store"), "--ks-credential", cred, "--ks-timeout", "200ms")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "d", "f.bin"), 1000, 9)
	os.Chmod(filepath.Join(src, "d", "f.bin"), 0o640)
	out, errs, code := u.run(t, "put", "-q", filepath.Join(src, "d"))
	if code != exitNoDedup || !strings.Contains(errs, "1 file stored without deduplication") || strings.Count(errs, "\n") != 1 {
		t.Fatalf("put -q with the key server down: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	s := u.summary(t, "put", "--force", filepath.Join(src, "d"))
	if s["fallback_files"].(float64) != 1 {
		t.Fatalf("summary: %v", s)
	}

	var e map[string]any
	if err := json.Unmarshal([]byte(u.mustRun(t, "ls", "--json", "d")), &e); err != nil {
		t.Fatal(err)
	}
	if e["size"].(float64) != 1000 || e["mode"] != "0640" || e["type"] != "file" || strings.HasPrefix(e["mtime"].(string), "0001") {
		t.Fatalf("ls --json: %v", e)
	}
	if out := u.mustRun(t, "mkdir", "--json", "n"); !strings.Contains(out, `"created":"n"`) {
		t.Fatalf("mkdir --json: %q", out)
	}
	if out := u.mustRun(t, "mv", "--json", "n", "m"); !strings.Contains(out, `"moved":"n"`) {
		t.Fatalf("mv --json: %q", out)
	}
	if out := u.mustRun(t, "rm", "--json", "-r", "d"); !strings.Contains(out, `"files":1`) {
		t.Fatalf("rm --json: %q", out)
	}
}

func TestE2EServeStatsTable(t *testing.T) {
	d := startServe(t, "alice")
	out, err := execVeil("serve", "stats", "--dir", d.dir)
	if err != nil || !strings.Contains(string(out), "dedup ratio") || !strings.Contains(string(out), "users           1") {
		t.Fatalf("serve stats: %v\n%s", err, out)
	}
	out, err = execVeil("serve", "stats", "--dir", d.dir, "--json")
	var st map[string]any
	if err != nil || json.Unmarshal(out, &st) != nil || st["users"].(float64) != 1 {
		t.Fatalf("serve stats --json: %v\n%s", err, out)
	}
}

// Errors: one line, no Go transport wording, no summary after a failure, usage mistakes
// exit 2 with the usage line, no path twice.
func TestE2EErrorVoice(t *testing.T) {
	u := localUser(t, "alice")
	for _, args := range [][]string{{"put"}, {"get", "a", "b", "c"}, {"ls", "--bogus"}, {"frob"}} {
		_, errs, code := u.run(t, args...)
		if code != exitUsage {
			t.Errorf("veil %v: exit %d, want %d (%s)", args, code, exitUsage, errs)
		}
		if args[0] != "frob" && !strings.Contains(errs, "\nusage: veil "+args[0]) {
			t.Errorf("veil %v: no usage line: %q", args, errs)
		}
	}
	_, errs, _ := u.run(t, "rm", "nothing")
	if strings.Count(errs, "nothing") != 1 || strings.Count(errs, "\n") != 1 {
		t.Errorf("rm nothing: %q", errs)
	}

	// A storage service that is down: one line naming host and cause, no summary.
	storeDir := t.TempDir()
	execVeil("store", "init", "--dir", storeDir)
	cred := filepath.Join(storeDir, "bob.cred")
	port := testutil.FreePort(t)
	if out, err := execVeil("store", "user", "add", "bob", "--dir", storeDir, "--out", cred, "--endpoint", "https://"+testutil.Addr(port)); err != nil {
		t.Fatalf("user add: %v %s", err, out)
	}
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f"), 100, 10)
	out, errs, code := u.runIn(t, src, []string{"VEIL_STORAGE=veil://" + testutil.Addr(port), "VEIL_STORE_CREDENTIAL=" + cred}, "put", "f")
	if code == 0 || out != "" || strings.Count(errs, "\n") != 1 || strings.Contains(errs, `"https://`) ||
		!strings.Contains(errs, "the storage service at "+testutil.Addr(port)+" does not answer (connection refused)") {
		t.Fatalf("put to a store that is down: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}
}

// Profile and passphrase: what is missing is said before any prompt; passwd checks the
// current passphrase before asking for a new one and warns about a short one; osync
// reads the same VEIL_PASSWORD_FILE convention.
func TestE2EProfileAndPassphraseOrder(t *testing.T) {
	nobody := &user{name: "nobody", config: filepath.Join(t.TempDir(), "none"), passFile: ""}
	cmd := exec.Command(veilBin, "ls")
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+nobody.config, "VEIL_PASSWORD_FILE=")
	out, _ := cmd.CombinedOutput() // stdin is not a terminal: a prompt would fail differently
	if !strings.Contains(string(out), "no veil profile in") {
		t.Fatalf("ls without a profile: %s", out)
	}

	u := localUser(t, "alice")
	wrong := filepath.Join(t.TempDir(), "wrong")
	os.WriteFile(wrong, []byte("not it\n"), 0o600)
	cmd = exec.Command(veilBin, "passwd", "--password-file", wrong)
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_NEW_PASSWORD_FILE=")
	out, _ = cmd.CombinedOutput()
	if !strings.Contains(string(out), "passphrase") || strings.Contains(string(out), "new passphrase") {
		t.Fatalf("passwd with a wrong current passphrase asked for the new one first: %s", out)
	}
	short := filepath.Join(t.TempDir(), "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	_, errs, code := u.run(t, "passwd", "--new-password-file", short)
	if code != 0 || !strings.Contains(errs, "warning: a passphrase of 3 characters") {
		t.Fatalf("passwd to abc: exit %d, %q", code, errs)
	}

	be := filepath.Join(t.TempDir(), "be")
	cmd = exec.Command(veilBin, "osync", "init", "--backend", be, "--files", "4", "--file-size", "4096", "--kdf-memory", "8", "--kdf-time", "1")
	cmd.Env = append(os.Environ(), "VEIL_PASSWORD_FILE="+short, "XDG_STATE_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("osync init with VEIL_PASSWORD_FILE: %v %s", err, out)
	}
	cmd = exec.Command(veilBin, "osync", "status", "--backend", be)
	cmd.Env = append(os.Environ(), "VEIL_OSYNC_PASSPHRASE=abc", "XDG_STATE_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "VEIL_PASSWORD_FILE") {
		t.Fatalf("osync with the old variable: %v %s", err, out)
	}
}

// veil osync passwd checks the current passphrase before it asks for the new one (a
// wrong one is named as such, with no new-passphrase prompt), and warns about a short new
// passphrase as veil passwd does (issue 15 item 17).
func TestE2EOsyncPasswdOrder(t *testing.T) {
	dir := t.TempDir()
	pass := func(name, p string) string {
		f := filepath.Join(dir, name)
		os.WriteFile(f, []byte(p+"\n"), 0o600)
		return f
	}
	good, wrong, short := pass("good", "a long enough passphrase"), pass("wrong", "not it at all"), pass("short", "abc")
	be := filepath.Join(dir, "be")
	osync := func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(veilBin, append([]string{"osync"}, args...)...)
		cmd.Env = append(os.Environ(), append([]string{"XDG_STATE_HOME=" + dir}, env...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	if _, errs, err := osync([]string{"VEIL_PASSWORD_FILE=" + good}, "init", "--backend", be,
		"--files", "4", "--file-size", "4096", "--kdf-memory", "8", "--kdf-time", "1"); err != nil {
		t.Fatalf("osync init: %v %s", err, errs)
	}
	// Wrong current passphrase, no new one given (stdin is not a terminal): the answer is
	// about the current passphrase, not a missing new one.
	_, errs, err := osync([]string{"VEIL_PASSWORD_FILE=" + wrong, "VEIL_NEW_PASSWORD_FILE="}, "passwd", "--backend", be)
	if err == nil || !strings.Contains(errs, "wrong passphrase") || strings.Contains(errs, "new passphrase") {
		t.Fatalf("osync passwd with a wrong current passphrase: %v %q", err, errs)
	}
	out, errs, err := osync([]string{"VEIL_PASSWORD_FILE=" + good, "VEIL_NEW_PASSWORD_FILE=" + short}, "passwd", "--backend", be)
	if err != nil || !strings.Contains(errs, "warning: a passphrase of 3 characters") || !strings.Contains(out, "changed") {
		t.Fatalf("osync passwd to abc: %v\nstdout %q\nstderr %q", err, out, errs)
	}
	if _, errs, err := osync([]string{"VEIL_PASSWORD_FILE=" + short}, "status", "--backend", be); err != nil {
		t.Fatalf("status with the new passphrase: %v %s", err, errs)
	}
}

// veil serve on a taken port leaves nothing half made, a later run's different address is
// refused rather than ignored; a second init from one invitation is refused.
func TestE2EServeSetupAndSecondInit(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "server")
	free := func() string { return testutil.Addr(testutil.FreePort(t)) }
	out, err := execVeil("serve", "--dir", dir, "--ks-listen", free(), "--ks-udp", free(), "--store-listen", taken.Addr().String(),
		"--peekaboo-k-listen", free(), "--peekaboo-v-listen", free(), "--user", "alice")
	if err == nil {
		t.Fatalf("serve on a taken port: %s", out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("serve on a taken port left %s (%s)", dir, out)
	}

	d := startServe(t, "alice")
	out, err = execVeil("serve", "--dir", d.dir, "--store-listen", free())
	if err == nil || !strings.Contains(string(out), "--store-listen") || !strings.Contains(string(out), "first run") {
		t.Fatalf("a later run with another address: %v %s", err, out)
	}
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "f"), 100, 11)
	alice.mustRun(t, "put", "-q", filepath.Join(src, "f"))
	again := &user{name: "alice2", config: filepath.Join(t.TempDir(), "profile"), passFile: alice.passFile}
	_, errs, code := again.run(t, "init", "--invite", filepath.Join(d.dir, "invites", "alice.invite"))
	if code == 0 || !strings.Contains(errs, "another veil key") {
		t.Fatalf("second init from one invitation: exit %d, %s", code, errs)
	}
}

// put --exclude-file, --files-from, --dry-run; get --include/--exclude.
func TestE2EPutSelectionAndGetFilters(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "src")
	for _, f := range []string{"a.txt", "b.o", "build/x.txt", "docs/r.pdf", "docs/drafts/d.pdf", "docs/n.txt"} {
		randomFile(t, filepath.Join(src, f), 100, byte(len(f)))
	}
	ignore := filepath.Join(t.TempDir(), "ignore")
	os.WriteFile(ignore, []byte("# build output\n*.o\n\nbuild\n"), 0o644)
	out := u.mustRun(t, "put", "-n", src, "--exclude-file", ignore)
	if !strings.Contains(out, "would store 4 files") || strings.Contains(out, "b.o") || !strings.Contains(out, "-> src/docs/r.pdf (file)") {
		t.Fatalf("put -n: %s", out)
	}
	if ls := u.mustRun(t, "ls"); ls != "" {
		t.Fatalf("put --dry-run stored: %q", ls)
	}
	s := u.summary(t, "put", src, "--exclude-file", ignore)
	if s["files"].(float64) != 4 || s["excluded"].(float64) != 2 {
		t.Fatalf("put --exclude-file: %v", s)
	}
	list := filepath.Join(t.TempDir(), "list")
	os.WriteFile(list, []byte(filepath.Join(src, "a.txt")+"\n"+filepath.Join(src, "b.o")+"\n"), 0o644)
	u.mustRun(t, "put", "-q", "--files-from", list, "--to", "picked")
	if ls := u.mustRun(t, "ls", "picked"); ls != "a.txt\nb.o\n" {
		t.Fatalf("--files-from: %q", ls)
	}

	dest := filepath.Join(t.TempDir(), "out")
	u.mustRun(t, "get", "-q", "--include", "*.pdf", "--exclude", "drafts", "src", dest)
	var got []string
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			r, _ := filepath.Rel(dest, p)
			got = append(got, r)
		}
		return nil
	})
	if strings.Join(got, ",") != "docs/r.pdf" {
		t.Fatalf("get --include '*.pdf' --exclude drafts: %v", got)
	}
	if _, err := os.Stat(filepath.Join(dest, "docs", "drafts")); err == nil {
		t.Fatal("an excluded folder was created")
	}
	sameFile(t, filepath.Join(src, "docs", "r.pdf"), filepath.Join(dest, "docs", "r.pdf"))
}

// FIFOs are stored as metadata and come back as FIFOs (they used to be refused).
func TestE2EFIFOStoredAndRestored(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(src, 0o755)
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := u.mustRun(t, "put", src); !strings.Contains(out, "1 FIFO/device, ") {
		t.Fatalf("put: %s", out)
	}
	var e map[string]any
	json.Unmarshal([]byte(u.mustRun(t, "ls", "--json", "d")), &e)
	if e["type"] != "fifo" || e["mode"] != "0600" {
		t.Fatalf("ls --json: %v", e)
	}
	out := filepath.Join(t.TempDir(), "d")
	u.mustRun(t, "get", "-q", "d", out)
	if fi, err := os.Lstat(filepath.Join(out, "pipe")); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("restored: %v %v", fi, err)
	}
}

// Long mv and rm -r report progress (every 100 entries; --progress when stderr is not a
// terminal).
func TestE2EMoveRemoveProgress(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "many")
	for i := range 250 {
		randomFile(t, filepath.Join(src, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d", i)), 10, byte(i))
	}
	u.mustRun(t, "put", "-q", src)
	_, errs, code := u.run(t, "mv", "--progress", "many", "moved")
	if code != 0 || !strings.Contains(errs, "veil: moved 100 of 250 entries") || !strings.Contains(errs, "veil: moved 200 of 250 entries") {
		t.Fatalf("mv --progress: exit %d, %q", code, errs)
	}
	_, errs, code = u.run(t, "rm", "-r", "--progress", "moved")
	if code != 0 || !strings.Contains(errs, "veil: removed 200 entries") {
		t.Fatalf("rm -r --progress: exit %d, %q", code, errs)
	}
	if _, errs, _ := u.run(t, "rm", "-r", "nothing"); strings.Contains(errs, "entries") {
		t.Fatalf("progress without --progress: %q", errs)
	}
}

// A lone small put to the storage service goes without the lock, in one batch, for a new
// file and for a changed one (what -v logs), and reads back; the device remembers its
// root in the slot file (roots/*.mem), not the older JSON file.
func TestE2ELonePutWithoutLock(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	src := t.TempDir()
	first, f := filepath.Join(src, "first"), filepath.Join(src, "f")
	randomFile(t, first, 100, 1)
	u.mustRun(t, "put", "-q", first) // a new namespace: its key check is written under the lock
	for i, seed := range []byte{2, 3} {
		want := randomFile(t, f, 4096, seed)
		_, errs, code := u.run(t, "put", "-q", "-v", f)
		if code != 0 || !strings.Contains(errs, "put without the lock") || strings.Contains(errs, "putting under the lock") {
			t.Fatalf("lone put %d: exit %d, log:\n%s", i, code, errs)
		}
		if created := fmt.Sprintf("created=%v", i == 0); !strings.Contains(errs, created) {
			t.Fatalf("lone put %d: log without %s:\n%s", i, created, errs)
		}
		out := filepath.Join(t.TempDir(), "f")
		u.mustRun(t, "get", "-q", "f", out)
		if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("lone put %d: get gives other bytes (%v)", i, err)
		}
	}
	mems, _ := filepath.Glob(filepath.Join(u.config, "roots", "*.mem"))
	jsons, _ := filepath.Glob(filepath.Join(u.config, "roots", "*.json"))
	if len(mems) != 1 || len(jsons) != 0 {
		t.Fatalf("root memory files: %v %v, want one .mem and no .json", mems, jsons)
	}
}

// mv onto a folder that exists says, in one line, the command that moves what is left of
// the source into it (an interrupted mv of an older veil left no mark); that command
// finishes it, and so does running it again (found by a user walkthrough: a rerun of an
// interrupted mv failed with "already exists" and nothing said what to do).
func TestE2EMoveResume(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a"), 10, 1)
	randomFile(t, filepath.Join(src, "sub", "b"), 10, 2)
	u.mustRun(t, "put", "-q", src)
	u.mustRun(t, "mkdir", "archive/docs/sub") // what an older veil's interrupted mv left
	_, errs, code := u.run(t, "mv", "docs", "archive/docs")
	if code == 0 || !strings.Contains(errs, "'veil mv --resume docs archive/docs'") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("mv onto an existing folder: exit %d %q", code, errs)
	}
	for range 2 {
		u.mustRun(t, "mv", "--resume", "docs", "archive/docs")
	}
	for _, p := range []string{"archive/docs/a", "archive/docs/sub/b"} {
		u.mustRun(t, "cat", p)
	}
	if _, _, code := u.run(t, "ls", "docs"); code == 0 {
		t.Fatal("docs still there after mv --resume")
	}
	if out, _, code := u.run(t, "check"); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("check after mv --resume: exit %d\n%s", code, out)
	}
}

// A folder mv SIGKILLed halfway is pending: a mv of its source elsewhere, an rm of its
// destination, a put into its source refuse in one line that names it and --resume (found
// by review: a second mv went through, left files in the destination no root listed, and
// 'ls' of the source said "not found" with nothing saying why); 'mv --resume' alone
// finishes it and says so.
func TestE2EMovePendingRefused(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "many")
	for i := range 600 {
		randomFile(t, filepath.Join(src, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d", i)), 10, byte(i))
	}
	u.mustRun(t, "put", "-q", src)
	killAfter(t, u, "veil: moved 100 of 600 entries", "mv", "--progress", "many", "moved")
	u.mustRun(t, "mkdir", "elsewhere") // elsewhere: goes on; takes over the killed mv's lock (a warning)
	// ls says which mv left what the root lists otherwise.
	noted := 0
	for _, side := range []string{"many", "moved"} {
		for d := range 5 {
			out, _, _ := u.run(t, "ls", fmt.Sprintf("%s/d%d", side, d))
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.Contains(line, "(") {
					continue
				}
				if !strings.Contains(line, "(left by an interrupted 'veil mv many moved', which is pending: run it again, or run 'veil mv --resume', to finish it)") {
					t.Fatalf("ls %s/d%d: %q", side, d, line)
				}
				noted++
			}
		}
	}
	if noted == 0 {
		t.Fatal("ls showed nothing the killed mv moved")
	}
	one := filepath.Join(t.TempDir(), "one")
	randomFile(t, one, 10, 1)
	for _, args := range [][]string{{"mv", "many", "other"}, {"rm", "-r", "moved"}, {"put", one, "--to", "many/d1"}, {"mkdir", "moved/d9"}} {
		errs := u.mustFail(t, args...)
		if !strings.Contains(errs, "an interrupted 'veil mv many moved' is pending; run it again, or run 'veil mv --resume', to finish it first") ||
			strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("veil %v with a mv pending: %q", args, errs)
		}
	}
	if out := u.mustRun(t, "mv", "--resume"); out != "finished the interrupted mv of many to moved\n" {
		t.Fatalf("mv --resume: %q", out)
	}
	if out := u.mustRun(t, "mv", "--resume"); out != "no interrupted mv to finish\n" {
		t.Fatalf("mv --resume again: %q", out)
	}
	if out := u.mustRun(t, "ls", "moved/d1"); strings.Count(out, "\n") != 120 {
		t.Fatalf("ls moved/d1 after mv --resume: %q", out)
	}
	if out, _, code := u.run(t, "check"); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("check after mv --resume: exit %d\n%s", code, out)
	}
	u.mustRun(t, "mv", "moved", "many")
}

// A bad value of get --overwrite is a usage mistake: exit 2 and the usage line, as any
// flag's (found by a user walkthrough: it exited 1).
func TestE2EGetOverwriteBadValue(t *testing.T) {
	u := localUser(t, "alice")
	_, errs, code := u.run(t, "get", "--overwrite", "sometimes", "x", t.TempDir())
	if code != exitUsage || !strings.HasPrefix(errs, `veil: --overwrite "sometimes": use always, if-changed or never`+"\nusage: veil get") {
		t.Fatalf("get --overwrite sometimes: exit %d, stderr %q", code, errs)
	}
}

// 'veil mv --resume' without names tries every pending mv: one that keeps files (its
// destination holds another version) does not stop the others (found by review: those
// listed after it were never finished). Some finished and some not is exit 3, each
// failure on stderr; the names it prints are quoted as every text output quotes them.
func TestE2EResumePendingGoesOn(t *testing.T) {
	u := localUser(t, "alice")
	const evil = "e\x1b[31m\nx"
	dir := t.TempDir()
	for i, p := range []string{evil + "/a", "y/a", "p/a", "q/a"} {
		randomFile(t, filepath.Join(dir, p), 10, byte(i))
	}
	for _, p := range []string{evil, "y", "p", "q"} {
		u.mustRun(t, "put", "-q", filepath.Join(dir, p))
	}
	for _, mv := range [][2]string{{evil, "y"}, {"p", "q"}} { // each keeps a: both marks stay, settled
		if errs := u.mustFail(t, "mv", "--resume", mv[0], mv[1]); !strings.Contains(errs, "another version") {
			t.Fatalf("mv --resume onto another version: %q", errs)
		}
	}
	u.mustRun(t, "rm", "q/a")
	out, errs, code := u.run(t, "mv", "--resume")
	if code != 3 || out != "finished the interrupted mv of p to q\n" || strings.Count(errs, "\n") != 1 ||
		!strings.Contains(errs, `finishing 'veil mv $'e\033[31m\nx' y'`) {
		t.Fatalf("mv --resume with one mv keeping files: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	u.mustRun(t, "rm", "y/a")
	if out := u.mustRun(t, "mv", "--resume"); out != `finished the interrupted mv of $'e\033[31m\nx' to y`+"\n" {
		t.Fatalf("mv --resume: %q", out)
	}
}
