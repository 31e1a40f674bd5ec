package main

import (
	"encoding/json"
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
