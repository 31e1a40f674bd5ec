package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Faults of the DupLESS client's commands found by session 16's user walkthrough (small
// ones: words, exit codes, consistency), each pinned end to end on the built binary.

// A --no-keyserver profile stores without deduplication by the user's choice: init says so
// once, and put does not warn about it after every run ("1 file stored WITHOUT
// deduplication (random key): no key server configured", exit 0), nor stats advise to put
// the files again. A configured key server
// that fails keeps its warning (TestE2EScriptingOutput: exit 4).
func TestE2ENoKeyServerSaidOnceAtInit(t *testing.T) {
	u := &user{name: "alice", config: filepath.Join(t.TempDir(), "profile"), passFile: filepath.Join(t.TempDir(), "pass")}
	os.WriteFile(u.passFile, []byte("passphrase of alice\n"), 0o600)
	out := u.mustRun(t, "init", "--storage", filepath.Join(t.TempDir(), "store"), "--no-keyserver")
	if !strings.Contains(out, "no key server: every file is stored under a random key, WITHOUT deduplication\n") {
		t.Fatalf("init --no-keyserver printed %q; want it to say once that files are not deduplicated", out)
	}
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	out, errs, code := u.run(t, "put", src)
	if code != 0 || errs != "" || strings.Contains(out, "WITHOUT") || strings.Count(out, "\n") != 1 {
		t.Fatalf("put: exit %d, stdout %q, stderr %q; want exit 0 and the summary alone", code, out, errs)
	}
	// stats counts those files, but does not tell to put them again: that changes nothing.
	if out := u.mustRun(t, "stats"); !strings.Contains(out, "1 file (stored under random keys; the profile has no key server)\n") {
		t.Fatalf("stats: %q; want the files without dedup put down to the profile", out)
	}
}

// A get of one file (or link) that fails retrieved nothing: a failure of the whole run, in
// one line and exit 1 (docs/scripting.md), with --json only the error object; it printed
// an empty summary, the file's line and "1 file failed (named above)", exit 3.
func TestE2ELoneGetFailureIsOneLine(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	if err := os.Symlink("a.txt", filepath.Join(src, "l")); err != nil {
		t.Fatal(err)
	}
	u.mustRun(t, "put", "-q", src)
	blocker := filepath.Join(t.TempDir(), "file")
	randomFile(t, blocker, 1, 2)
	for _, name := range []string{"a.txt", "l"} {
		dest := filepath.Join(blocker, "x")
		out, errs, code := u.run(t, "get", "docs/"+name, dest)
		want := "veil: docs/" + name + ": mkdir " + blocker + ": not a directory\n"
		if code != 1 || out != "" || errs != want {
			t.Errorf("get docs/%s into a file: exit %d, stdout %q, stderr %q; want exit 1 and %q alone", name, code, out, errs, want)
		}
		out, _, code = u.run(t, "get", "--json", "docs/"+name, dest)
		if code != 1 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"exit_code":1}`) {
			t.Errorf("get --json docs/%s into a file: exit %d, stdout %q; want only the error object", name, code, out)
		}
	}
	// A lone file that arrives has its summary, as before.
	if out := u.mustRun(t, "get", "docs/a.txt", filepath.Join(t.TempDir(), "a.txt")); !strings.HasPrefix(out, "retrieved 1 file") {
		t.Fatalf("get of a file that arrives: %q", out)
	}
}

// forgetUsage is forget's usage line, which follows every usage mistake of it.
const forgetUsage = "usage: veil forget --keep-... [--prune] [flags] (see 'veil forget --help')\n"

// A usage mistake a command finds itself (a flag's value, a policy left out) exits 2 with
// the command's usage line, as cobra's own do (docs/scripting.md); it gave the message
// alone.
func TestE2EUsageMistakesFoundInsideACommand(t *testing.T) {
	u := localUser(t, "alice")
	for _, c := range []struct{ args, want string }{
		{"forget", "veil: forget needs a policy: at least one of --keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-within, --drop-damaged\n" + forgetUsage},
		{"check --read-data-subset 200%", "veil: --read-data-subset \"200%\": give a percentage in (0%, 100%], e.g. 10%\nusage: veil check [--read-data | --read-data-subset N%] [--repair] [flags] (see 'veil check --help')\n"},
		{"get --version -1 x", "veil: --version counts from 1\nusage: veil get SRC [DEST|-] [flags] (see 'veil get --help')\n"},
		{"diff", "veil: diff needs FROM and TO (snapshots or times), or --local DIR\nusage: veil diff FROM TO [PATH] | diff --local DIR [PATH] [flags] (see 'veil diff --help')\n"},
	} {
		args := strings.Fields(c.args)
		_, errs, code := u.run(t, args...)
		if code != 2 || errs != c.want {
			t.Errorf("veil %s: exit %d, stderr %q; want exit 2, %q", c.args, code, errs, c.want)
		}
		out, errs2, code := u.run(t, append([]string{args[0], "--json"}, args[1:]...)...)
		if code != 2 || errs2 != c.want || !strings.HasSuffix(out, `"exit_code":2}`+"\n") {
			t.Errorf("veil %s --json: exit %d, stdout %q, stderr %q", c.args, code, out, errs2)
		}
	}
}

// -j 0 and -j -1 are usage mistakes naming the flag; the default silently replaced them.
func TestE2EJobsAtLeastOne(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	for _, args := range [][]string{{"put", "-j", "0", src}, {"put", "-j", "-1", src}, {"get", "-j", "0", "docs", t.TempDir()}} {
		_, errs, code := u.run(t, args...)
		want := `veil: invalid argument "` + args[2] + `" for "-j, --jobs" flag: give at least 1` + "\nusage: veil " + args[0]
		if code != 2 || !strings.HasPrefix(errs, want) || strings.Count(errs, "\n") != 2 {
			t.Errorf("veil %v: exit %d, stderr %q; want exit 2, %q...", args, code, errs, want)
		}
	}
	if _, errs, code := u.run(t, "put", "-q", "-j", "1", src); code != 0 || errs != "" {
		t.Fatalf("put -j 1: exit %d, %q", code, errs)
	}
}

// Hints: a missing key file says to restore it from the copy of the profile directory
// (it said "key file: open .../key: no such file or directory"); init given two different
// passphrases at the terminal says to run it again (it said "the passphrases differ").
func TestE2EHintsMissingKeyAndPassphraseTypo(t *testing.T) {
	u := localUser(t, "alice")
	key := filepath.Join(u.config, "key")
	if err := os.Rename(key, key+".away"); err != nil {
		t.Fatal(err)
	}
	want := "veil: the key file " + key + " is missing: restore it from your copy of the profile directory (without it nothing stored can be read)\n"
	for _, args := range [][]string{{"ls"}, {"passwd", "--new-password-file", u.passFile}} {
		if _, errs, code := u.run(t, args...); code != 1 || errs != want {
			t.Errorf("veil %v without the key file: exit %d, stderr %q; want %q", args, code, errs, want)
		}
	}
	// Said before the passphrase is asked for: without a passphrase file or a terminal
	// the command names the missing key file, not the missing passphrase.
	noPass := *u
	noPass.passFile = ""
	for _, args := range [][]string{{"ls"}, {"passwd"}} {
		if _, errs, code := noPass.run(t, args...); code != 1 || errs != want {
			t.Errorf("veil %v without the key file or a passphrase: exit %d, stderr %q; want %q", args, code, errs, want)
		}
	}

	profile := filepath.Join(t.TempDir(), "profile")
	cmd := onTerminal(t, "init --no-keyserver --storage "+filepath.Join(t.TempDir(), "store"), "VEIL_CONFIG="+profile, "VEIL_PASSWORD_FILE=")
	cmd.Stdin = strings.NewReader("first passphrase\nsecond passphrase\n")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "veil: the two passphrases you typed differ; nothing was changed: run the same command again") {
		t.Fatalf("init with two different passphrases: %q; want the hint to run it again", out)
	}
	if _, err := os.Stat(profile); err == nil {
		t.Fatal("init with two different passphrases wrote a profile")
	}
}

// get, cat and ls of a path that was deleted point to its versions ('veil log'); a path
// never stored is only not found. (ls gave "not found" alone.)
func TestE2EDeletedPathPointsToLog(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	randomFile(t, filepath.Join(src, "sub", "b.txt"), 100, 2)
	u.mustRun(t, "put", "-q", src)
	u.mustRun(t, "rm", "docs/a.txt")
	u.mustRun(t, "rm", "-r", "docs/sub")
	hint := " (deleted: 'veil log' lists its versions, 'veil get --version N' retrieves one)"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "docs/a.txt", filepath.Join(t.TempDir(), "a")}, "veil: docs/a.txt: not found" + hint + "\n"},
		{[]string{"cat", "docs/a.txt"}, "veil: docs/a.txt: not found" + hint + "\n"},
		{[]string{"ls", "docs/a.txt"}, "veil: docs/a.txt: not found" + hint + "\n"},
		{[]string{"ls", "-l", "docs/sub"}, "veil: docs/sub: not found" + hint + "\n"},
		{[]string{"get", "docs/never.txt", filepath.Join(t.TempDir(), "a")}, "veil: docs/never.txt: not found\n"},
		{[]string{"ls", "docs/never.txt"}, "veil: docs/never.txt: not found\n"},
	} {
		if _, errs, code := u.run(t, c.args...); code != 1 || errs != c.want {
			t.Errorf("veil %v: exit %d, stderr %q; want exit 1, %q", c.args, code, errs, c.want)
		}
	}
	u.mustRun(t, "get", "--version", "1", "docs/a.txt", filepath.Join(t.TempDir(), "a"))
}

// NAME/ is a folder for ls and cat as for rm: a stored file given with a trailing slash
// is refused, in rm's words (ls and cat took the file); a folder's slash is as before.
func TestE2ETrailingSlashOnAFile(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	u.mustRun(t, "put", "-q", src)
	want := "veil: docs/a.txt is a stored file, not a folder (drop the trailing /)\n"
	dest := filepath.Join(t.TempDir(), "out")
	for _, args := range [][]string{{"rm", "docs/a.txt/"}, {"ls", "docs/a.txt/"}, {"cat", "docs/a.txt/"}, {"get", "docs/a.txt/", "-"},
		{"get", "docs/a.txt/", dest}} {
		if out, errs, code := u.run(t, args...); code != 1 || out != "" || errs != want {
			t.Errorf("veil %v: exit %d, stdout %q, stderr %q; want exit 1, %q", args, code, out, errs, want)
		}
	}
	if _, err := os.Lstat(dest); err == nil {
		t.Error("get docs/a.txt/ DEST wrote DEST")
	}
	if out := u.mustRun(t, "ls", "docs/"); out != "a.txt\n" {
		t.Fatalf("ls docs/: %q", out)
	}
	u.mustRun(t, "get", "-q", "docs/", dest) // a folder's trailing slash is fine
	if _, err := os.Stat(filepath.Join(dest, "a.txt")); err != nil {
		t.Fatalf("get docs/ DEST: %v", err)
	}
}

// The progress bar counts in the summaries' binary units (MiB), not MB. The terminal is
// script(1)'s.
func TestE2EProgressInMiB(t *testing.T) {
	u := localUser(t, "alice")
	cmd := u.onTerminal(t, "put "+randomDocs(t, 3_000_000))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/23 MiB)") || strings.Contains(string(out), "MB") {
		t.Fatalf("put on a terminal: %v\n%q\nwant a progress bar counting MiB (\"/23 MiB)\"), as the summary does", err, out)
	}
}

// ls -l, ls --json and log show a symlink's size as lstat(2) and GNU ls -l do: its
// target's length (they showed 0, the size its record keeps; the mount showed the length).
func TestE2ESymlinkSizeIsTargetLength(t *testing.T) {
	u := localUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	link := filepath.Join(src, "l")
	if err := os.Symlink("a.txt/../a.txt", link); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(link)
	if err != nil || fi.Size() != 14 {
		t.Fatalf("lstat of the local link: %v, %v", fi, err)
	}
	u.mustRun(t, "put", "-q", src)
	if out := u.mustRun(t, "ls", "-l", "docs/l"); !strings.HasPrefix(out, "lrwxrwxrwx 14 ") || !strings.HasSuffix(out, " l -> a.txt/../a.txt\n") {
		t.Errorf("ls -l docs/l: %q; want size 14, as ls -l shows it", out)
	}
	if out := u.mustRun(t, "ls", "--json", "docs/l"); !strings.Contains(out, `"size":14,`) {
		t.Errorf("ls --json docs/l: %q; want size 14", out)
	}
	lines := strings.Split(u.mustRun(t, "log", "docs/l"), "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "  14 B  ") {
		t.Errorf("log docs/l: %q; want size 14 B", lines)
	}
	if out := u.mustRun(t, "ls", "-l", "docs/a.txt"); len(strings.Fields(out)) < 2 || strings.Fields(out)[1] != "100" {
		t.Errorf("ls -l docs/a.txt: %q; a file's size is as before", out)
	}
}
