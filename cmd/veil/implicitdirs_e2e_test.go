package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Folders veil makes without being asked to (mkdir's parents, put --to's destination) show
// a mode and a time, as mkdir's do, and get restores them 0755. Found by review: ls -l
// showed d?????????, ls --json mode 0 and year 0001, and get restored them 0700.
func TestE2EImplicitFoldersHaveModes(t *testing.T) {
	u := localUser(t, "alice")
	u.mustRun(t, "mkdir", "a/b/c")
	one := filepath.Join(t.TempDir(), "one")
	randomFile(t, one, 10, 1)
	u.mustRun(t, "put", "-q", one, "--to", "p/q")
	for _, dir := range []string{"a", "a/b", "p", "p/q"} {
		args := []string{"ls", "-l"}
		if parent := filepath.Dir(dir); parent != "." {
			args = append(args, parent)
		}
		if out := u.mustRun(t, args...); !strings.Contains(out, "drwxr-xr-x") || strings.Contains(out, "?") {
			t.Errorf("ls -l of %s's folder: %q", dir, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(u.mustRun(t, "ls", "--json", "p")), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if e["mode"] != "0755" || strings.HasPrefix(e["mtime"].(string), "0001") {
			t.Errorf("ls --json p: %v", e)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	u.mustRun(t, "get", "-q", "p", out)
	if fi, err := os.Stat(filepath.Join(out, "q")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("get p: q %v %v, want 0755", fi, err)
	}
}

// Folders an older veil made along the way have no record: check names them, as no damage
// (exit 0); check --repair gives them one, a second check is clean, and ls -l shows their
// mode. The namespace is made as a veil older than tree roots left it: no folder records,
// no root, and a device that never saw one.
func TestE2ECheckRepairsFoldersWithoutRecord(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	one := filepath.Join(t.TempDir(), "one")
	randomFile(t, one, 10, 1)
	u.mustRun(t, "put", "-q", one, "--to", "a/b")
	asOlderVeilFolders(t, u, store)
	if out := u.mustRun(t, "ls", "-l"); !strings.HasPrefix(out, "d?????????") {
		t.Fatalf("ls -l of an older veil's folder: %q", out)
	}
	out := u.mustRun(t, "check")
	if !strings.Contains(out, "folder without a record: a/\nfolder without a record: a/b/\n") || !strings.Contains(out, "no damage") ||
		!strings.Contains(out, "2 folders have no record") || !strings.Contains(out, "'veil check --repair'") {
		t.Fatalf("check: %q", out)
	}
	if out := u.mustRun(t, "check", "--repair"); !strings.Contains(out, "wrote the missing record of 2 folders: drwxr-xr-x, dated now\n") {
		t.Fatalf("check --repair: %q", out)
	}
	if out := u.mustRun(t, "check"); strings.Contains(out, "record") || !strings.Contains(out, "no damage") {
		t.Fatalf("check after the repair: %q", out)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(u.mustRun(t, "check", "--repair", "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if rep, _ := res["repair"].(map[string]any); len(res["folders_without_record"].([]any)) != 0 || rep == nil || len(rep["recorded"].([]any)) != 0 {
		t.Fatalf("check --repair --json of a repaired tree: %v", res)
	}
	for _, dir := range []string{"", "a"} {
		args := []string{"ls", "-l"}
		if dir != "" {
			args = append(args, dir)
		}
		if out := u.mustRun(t, args...); !strings.HasPrefix(out, "drwxr-xr-x") {
			t.Errorf("ls -l %s after the repair: %q", dir, out)
		}
	}
}

// asOlderVeilFolders makes u's local storage store what a veil older than tree roots and
// folder records left: every folder's record and every root are deleted, and u's device
// forgets the roots it saw.
func asOlderVeilFolders(t *testing.T, u *user, store string) {
	t.Helper()
	err := filepath.WalkDir(store, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && strings.HasPrefix(d.Name(), ".veil"):
			return filepath.SkipDir
		case d.Name() == ".dir":
			return os.Remove(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(store, ".veil", "roots"), filepath.Join(u.config, "roots")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
}

// check --repair leaves the folders a killed mv covers, each named, and exits 3; once
// 'veil mv --resume' has finished the mv, it records them.
func TestE2ECheckRepairLeavesPendingMove(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := filepath.Join(t.TempDir(), "many")
	for i := range 150 {
		randomFile(t, filepath.Join(src, fmt.Sprintf("d%d", i%2), fmt.Sprintf("f%03d", i)), 10, byte(i))
	}
	u.mustRun(t, "put", "-q", src, "--to", "old")
	u.mustRun(t, "put", "-q", src, "--to", "other")
	asOlderVeilFolders(t, u, store)
	killAfter(t, u, "veil: moved 100 of 150 entries", "mv", "--progress", "old/many", "moved")
	out, _, code := u.run(t, "check", "--repair")
	if code != 3 || !strings.Contains(out, "left without a record (an interrupted mv covers it): old/\n") ||
		!strings.Contains(out, "wrote the missing record of 4 folders: drwxr-xr-x, dated now\n") {
		t.Fatalf("check --repair with a mv pending: exit %d\n%s", code, out)
	}
	if out := u.mustRun(t, "ls", "-l", "other"); strings.Contains(out, "?") {
		t.Fatalf("ls -l other after the repair: %q", out)
	}
	u.mustRun(t, "mv", "--resume")
	if out := u.mustRun(t, "check", "--repair"); !strings.Contains(out, "no damage") || !strings.Contains(out, "wrote the missing record of") {
		t.Fatalf("check --repair after mv --resume: %q", out)
	}
	if out := u.mustRun(t, "check"); strings.Contains(out, "record") || !strings.Contains(out, "no damage") {
		t.Fatalf("check after the repair: %q", out)
	}
	for _, dir := range []string{"", "old", "moved"} {
		if out := u.mustRun(t, "ls", "-l", dir); strings.Contains(out, "?") {
			t.Errorf("ls -l %s after the repair: %q", dir, out)
		}
	}
}
