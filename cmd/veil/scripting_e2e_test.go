package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Scripting (docs/scripting.md): one exit status rule for find, one error rule for every
// --json command, and names that are not valid UTF-8 kept exactly (the session 12
// walkthrough found each of the three broken).

// lastJSON decodes the last line of out.
func lastJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &m); err != nil {
		t.Errorf("last line of %q: %v", out, err)
	}
	return m
}

// find exits as grep does, with and without --json: 0 found, 1 nothing found, 2 could not
// search.
func TestE2EFindExitStatus(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 10, 1)
	u.mustRun(t, "put", "-q", src)
	for _, tc := range []struct {
		args []string
		env  []string
		code int
	}{
		{[]string{"find", "a.txt"}, nil, 0},
		{[]string{"find", "nothing.txt"}, nil, exitNothingFound},
		{[]string{"find", "a.txt"}, []string{"VEIL_STORAGE=" + filepath.Join(t.TempDir(), "gone")}, exitFindFailed},
		{[]string{"find"}, nil, exitUsage},
	} {
		for _, asJSON := range []bool{false, true} {
			args := tc.args
			if asJSON {
				args = append([]string{args[0], "--json"}, args[1:]...)
			}
			out, errs, code := u.runIn(t, t.TempDir(), tc.env, args...)
			if code != tc.code {
				t.Errorf("veil %v: exit %d, want %d (stderr %q)", args, code, tc.code, errs)
			}
			switch {
			case code == 0 && asJSON:
				if m := lastJSON(t, out); m["path"] != "docs/a.txt" {
					t.Errorf("veil %v: %q", args, out)
				}
			case code == 0:
				if out != "docs/a.txt\n" {
					t.Errorf("veil %v: %q", args, out)
				}
			case asJSON:
				if m := lastJSON(t, out); m["exit_code"] != float64(tc.code) || m["error"] == "" {
					t.Errorf("veil %v: stdout %q", args, out)
				}
			default:
				if out != "" || !strings.HasPrefix(errs, "veil: ") {
					t.Errorf("veil %v: stdout %q stderr %q", args, out, errs)
				}
			}
		}
	}
}

// Every failure says one line on stderr; with --json stdout ends with
// {"error": <that line>, "exit_code": N}, after the results the command could give, and
// never with a summary of a run that failed as a whole; cat and get - keep stdout content.
func TestE2EJSONErrorRule(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 10, 1)
	randomFile(t, filepath.Join(src, strings.Repeat("L", 200)), 10, 2)
	u.mustRun(t, "put", "-q", src)
	dest := t.TempDir()
	for _, args := range [][]string{
		{"get", "nope", filepath.Join(dest, "x")}, {"put", filepath.Join(dest, "missing")}, {"ls", "nope"},
		{"rm", "nope"}, {"mv", "nope", "x"}, {"mkdir", "docs/a.txt"}, {"log", "nope"}, {"diff", "99", "latest"},
		{"check", "--read-data-subset", "7"}, {"find", "nope"}, {"sync", filepath.Join(dest, "missing"), "docs"},
		{"snapshots", "--bogus"},
	} {
		plain, perrs, pcode := u.run(t, args...)
		out, errs, code := u.run(t, append([]string{args[0], "--json"}, args[1:]...)...)
		if code == 0 || code != pcode || errs != perrs || plain != "" || !strings.HasPrefix(errs, "veil: ") {
			t.Errorf("veil %v: exit %d / %d with --json, stdout %q, stderr %q / %q", args, pcode, code, plain, perrs, errs)
			continue
		}
		want := strings.TrimPrefix(strings.SplitN(errs, "\n", 2)[0], "veil: ")
		if m := lastJSON(t, out); m["error"] != want || m["exit_code"] != float64(code) || strings.Count(out, "\n") != 1 {
			t.Errorf("veil %v --json: stdout %q, want only the error object of %q", args, out, want)
		}
	}

	// Results first, then the error: ls of a folder with an entry it cannot read (its long
	// name's name object is gone) lists both entries and ends with the error, exit 3.
	names, _ := filepath.Glob(filepath.Join(store, ".veil", "names", "*"))
	if len(names) != 1 || os.Remove(names[0]) != nil {
		t.Fatalf("name objects: %v", names)
	}
	out, errs, code := u.run(t, "ls", "--json", "docs")
	if m := lastJSON(t, out); code != 3 || strings.Count(out, "\n") != 3 || m["exit_code"] != float64(3) ||
		errs != "veil: "+m["error"].(string)+"\n" {
		t.Errorf("ls --json of a damaged folder: exit %d\nstdout %q\nstderr %q", code, out, errs)
	}

	// Content on stdout stays content: no JSON is added to it.
	for _, args := range [][]string{{"cat", "--json", "docs"}, {"get", "--json", "nope", "-"}} {
		if out, errs, code := u.run(t, args...); code == 0 || out != "" || errs == "" {
			t.Errorf("veil %v: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}

// A name that is not valid UTF-8 keeps its exact bytes in X_bytes (base64) in every JSON
// output that carries names, and a script can address the file by them; a valid name
// has no X_bytes. Through a real 'veil serve' (find searches its encrypted names).
func TestE2EJSONNamesNotUTF8(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "bad")
	file, link := "caf\xe9.txt", "l\xff"
	content := randomFile(t, filepath.Join(src, file), 100, 3)
	randomFile(t, filepath.Join(src, "ok.txt"), 10, 4)
	if err := os.Symlink(file, filepath.Join(src, link)); err != nil {
		t.Fatal(err)
	}
	// A folder where a file of its name is stored: put fails it (putclash.go).
	randomFile(t, filepath.Join(src, "s\xfe", "in"), 10, 5)
	clash := filepath.Join(t.TempDir(), "s\xfe")
	randomFile(t, clash, 10, 6)
	u.mustRun(t, "put", clash, "--to", "bad")
	raw := func(t *testing.T, m map[string]any, field string) string {
		t.Helper()
		enc, ok := m[field+"_bytes"].(string)
		shown, _ := m[field].(string)
		b, err := base64.StdEncoding.DecodeString(enc)
		if !ok || err != nil || !strings.Contains(shown, "\ufffd") {
			t.Fatalf("%s_bytes of %v: %v", field, m, err)
		}
		return string(b)
	}
	lines := func(t *testing.T, out string) []map[string]any {
		t.Helper()
		var ms []map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatalf("%q: %v", out, err)
			}
			ms = append(ms, m)
		}
		return ms
	}

	plan := lines(t, u.mustRun(t, "put", "-n", "--json", src))[0]
	locals := map[string]bool{}
	for _, e := range plan["entries"].([]any) {
		if m := e.(map[string]any); m["local_bytes"] != nil {
			locals[raw(t, m, "local")] = true
			raw(t, m, "dest")
		} else if strings.Contains(m["local"].(string), "\ufffd") || m["dest_bytes"] != nil {
			t.Errorf("put -n: %v", m)
		}
	}
	if !locals[filepath.Join(src, file)] || !locals[filepath.Join(src, link)] {
		t.Errorf("put -n --json: %v", plan)
	}
	out, _, code := u.run(t, "put", "--json", src) // the folder s\xfe cannot be stored: exit 3
	sum := lines(t, out)
	if errs := sum[0]["errors"].([]any); code != 3 || len(errs) != 1 || raw(t, errs[0].(map[string]any), "path") != filepath.Join(src, "s\xfe") {
		t.Fatalf("put --json: exit %d, %q", code, out)
	}

	byPath := map[string]map[string]any{}
	for _, m := range lines(t, u.mustRun(t, "ls", "--json", "bad")) {
		if m["path_bytes"] == nil {
			byPath[m["path"].(string)] = m
			continue
		}
		byPath[raw(t, m, "path")] = m
	}
	if byPath["bad/ok.txt"] == nil || byPath["bad/"+file] == nil || raw(t, byPath["bad/"+link], "symlink") != file {
		t.Fatalf("ls --json: %v", byPath)
	}
	// The script's way back to the file: the bytes it was given.
	got := filepath.Join(t.TempDir(), "got")
	u.mustRun(t, "get", raw(t, byPath["bad/"+file], "path"), got)
	if b, _ := os.ReadFile(got); !bytes.Equal(b, content) {
		t.Fatal("get by path_bytes: wrong content")
	}
	if m := lines(t, u.mustRun(t, "find", "--json", file))[0]; raw(t, m, "path") != "bad/"+file {
		t.Errorf("find --json: %v", m)
	}
	var vs []map[string]any
	if err := json.Unmarshal([]byte(u.mustRun(t, "log", "--json", "bad/"+link)), &vs); err != nil || raw(t, vs[0], "symlink") != file {
		t.Errorf("log --json: %v %v", vs, err)
	}
	if m := lines(t, u.mustRun(t, "mkdir", "--json", "bad/d\xfe"))[0]; raw(t, m, "created") != "bad/d\xfe" {
		t.Errorf("mkdir --json: %v", m)
	}
	if m := lines(t, u.mustRun(t, "mv", "--json", "bad/d\xfe", "bad/e\xfe"))[0]; raw(t, m, "moved") != "bad/d\xfe" || raw(t, m, "to") != "bad/e\xfe" {
		t.Errorf("mv --json: %v", m)
	}
	var chs []map[string]any
	if err := json.Unmarshal([]byte(u.mustRun(t, "diff", "--json", "2", "latest")), &chs); err != nil || len(chs) != 1 ||
		raw(t, chs[0], "path") != "bad/e\xfe" {
		t.Errorf("diff --json: %v %v", chs, err)
	}
	if m := lines(t, u.mustRun(t, "rm", "--json", "-r", "bad/e\xfe"))[0]; raw(t, m, "removed") != "bad/e\xfe" {
		t.Errorf("rm --json: %v", m)
	}
	if out := u.mustRun(t, "ls", "--json", "bad/ok.txt"); strings.Contains(out, "_bytes") {
		t.Errorf("a valid name has no _bytes: %q", out)
	}
}

// Errors about an entry whose name cannot be decrypted name the user's folder, not the
// encrypted path of the entry; the object an operator looks for is beside it.
func TestE2EErrorsNameTheUsersFolder(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 10, 1)
	randomFile(t, filepath.Join(src, strings.Repeat("L", 200)), 10, 2)
	u.mustRun(t, "put", "-q", src)
	encDirs, _ := filepath.Glob(filepath.Join(store, "[^.]*"))
	names, _ := filepath.Glob(filepath.Join(store, ".veil", "names", "*"))
	if len(encDirs) != 1 || len(names) != 1 {
		t.Fatalf("store: %v %v", encDirs, names)
	}
	encDir := filepath.Base(encDirs[0])
	os.Rename(names[0], names[0]+".gone")
	for _, args := range [][]string{{"get", "docs", filepath.Join(t.TempDir(), "out")}, {"rm", "-r", "docs"}, {"mv", "docs", "x"}, {"check"}} {
		errs := u.mustFail(t, args...)
		if !strings.HasPrefix(errs, "veil: docs: an entry's name cannot be read: ") || strings.Contains(errs, encDir) ||
			!strings.Contains(errs, ".veil/names/"+filepath.Base(names[0])) {
			t.Errorf("veil %v, its long name's name object gone: %q", args, errs)
		}
	}
	os.Rename(names[0]+".gone", names[0])
	os.MkdirAll(filepath.Join(store, encDir, "notmine"), 0o755)
	os.WriteFile(filepath.Join(store, encDir, "notmine", ".dir"), []byte("x"), 0o644)
	// (mv docs x above left the folders it had made under x: mv docs y.)
	for _, args := range [][]string{{"rm", "-r", "docs"}, {"mv", "docs", "y"}} {
		if errs := u.mustFail(t, args...); !strings.HasPrefix(errs, "veil: docs: an entry (stored object "+encDir+"/notmine): not encrypted under this key") {
			t.Errorf("veil %v, another's entry in the folder: %q", args, errs)
		}
	}
}

// An interrupted find exits 130, as every command Ctrl-C stops short does, never 1
// ("nothing found"): here the storage service accepts connections and never answers, and
// find gets Ctrl-C.
func TestE2EFindInterrupted(t *testing.T) {
	u := localUser(t, "alice")
	storeDir := t.TempDir()
	execVeil("store", "init", "--dir", storeDir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connected := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
			select {
			case connected <- struct{}{}:
			default:
			}
		}
	}()
	cred := filepath.Join(storeDir, "alice.cred")
	if out, err := execVeil("store", "user", "add", "alice", "--dir", storeDir, "--out", cred, "--endpoint", "https://"+ln.Addr().String()); err != nil {
		t.Fatalf("user add: %v %s", err, out)
	}
	cmd := exec.Command(veilBin, "find", "--json", "a.txt")
	cmd.Env = append(os.Environ(), "VEIL_CONFIG="+u.config, "VEIL_PASSWORD_FILE="+u.passFile,
		"VEIL_STORAGE=veil://"+ln.Addr().String(), "VEIL_STORE_CREDENTIAL="+cred)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select { // find waits on the service (a fixed 1.5 s sleep before assumed it)
	case <-connected:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("find did not connect to the storage service within 30 s: %q", errb.String())
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || errb.String() != "veil: interrupted\n" ||
		lastJSON(t, out.String())["exit_code"] != float64(130) {
		t.Fatalf("interrupted find: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}
