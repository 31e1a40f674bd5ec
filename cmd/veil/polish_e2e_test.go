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
// deduplication (random key): no key server configured", exit 0). A configured key server
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
}
