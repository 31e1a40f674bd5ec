package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// veil diff and veil sync through the real binary and servers.
func TestE2EDiffAndSync(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "keep.txt"), 100, 1)
	randomFile(t, filepath.Join(src, "old.txt"), 100, 2)
	randomFile(t, filepath.Join(src, "sub", "deep.txt"), 100, 3)
	randomFile(t, filepath.Join(src, "edit.txt"), 100, 4)
	alice.mustRun(t, "put", src)
	os.Rename(filepath.Join(src, "old.txt"), filepath.Join(src, "renamed.txt"))
	os.RemoveAll(filepath.Join(src, "sub"))
	randomFile(t, filepath.Join(src, "edit.txt"), 200, 5)
	os.Chtimes(filepath.Join(src, "edit.txt"), time.Now(), time.Now().Add(time.Minute))

	// docs/ itself has a new modification time: sync writes its record again (a diff
	// between snapshots lists folders made and removed only).
	want := "M docs/edit.txt\n- docs/old.txt\n+ docs/renamed.txt\n- docs/sub/\n- docs/sub/deep.txt\n"
	if out := alice.mustRun(t, "diff", "--local", src); out != "U docs/\n"+want {
		t.Fatalf("diff --local:\n%s\nwant:\nU docs/\n%s", out, want)
	}
	if out := alice.mustRun(t, "sync", "--dry-run", src); !strings.HasPrefix(out, "U docs/\n"+want) || !strings.Contains(out, "6 changes (dry run") {
		t.Fatalf("sync --dry-run:\n%s", out)
	}
	if out := alice.mustRun(t, "ls", "docs"); !strings.Contains(out, "old.txt") {
		t.Fatalf("the dry run removed something:\n%s", out)
	}
	var res struct {
		Removed int `json:"removed"`
	}
	json.Unmarshal([]byte(alice.mustRun(t, "sync", src, "--json")), &res)
	if res.Removed != 2 {
		t.Fatalf("sync removed %d entries, want 2 (old.txt and sub/)", res.Removed)
	}
	if out := alice.mustRun(t, "diff", "--local", src); out != "" {
		t.Fatalf("after sync, diff --local:\n%s", out)
	}
	inSrc := *alice // "." names the folder, as sync stores it (it compared the whole root)
	inSrc.cwd = src
	if out := inSrc.mustRun(t, "diff", "--local", "."); out != "" {
		t.Fatalf("after sync, diff --local . in the folder:\n%s", out)
	}
	restored := filepath.Join(t.TempDir(), "docs")
	alice.mustRun(t, "get", "docs", restored)
	diffTrees(t, src, restored)
	// Between snapshots: 1 is the first put, latest is after the sync. The renamed file,
	// whose record holds the same content and time, is a move there (diffmove_e2e_test.go).
	want = "M docs/edit.txt\nR docs/old.txt -> docs/renamed.txt\n- docs/sub/\n- docs/sub/deep.txt\n"
	if out := alice.mustRun(t, "diff", "1", "latest"); out != want {
		t.Fatalf("diff 1 latest:\n%s\nwant:\n%s", out, want)
	}
	var chs []map[string]any
	json.Unmarshal([]byte(alice.mustRun(t, "diff", "1", "latest", "docs/sub", "--json")), &chs)
	if len(chs) != 2 || chs[0]["change"] != "removed" {
		t.Fatalf("diff --json docs/sub: %v", chs)
	}
	// Removed by sync, still in history.
	out := filepath.Join(t.TempDir(), "deep.txt")
	alice.mustRun(t, "get", "--version", "1", "docs/sub/deep.txt", out)
	for _, bad := range [][]string{{"diff"}, {"diff", "1"}, {"diff", "--local", src, "a", "b"}} {
		if _, errs, code := alice.run(t, bad...); code != 2 || strings.Count(errs, "\n") != 2 || !strings.Contains(errs, "\nusage: veil diff ") {
			t.Fatalf("veil %v: exit %d %q; want 2, one line and the usage line", bad, code, errs)
		}
	}
	// A local folder diff cannot read is an error, not "no differences" (found by review:
	// DiffLocal's error went into a shadowed variable).
	if out, errs, code := alice.run(t, "diff", "--local", filepath.Join(src, "nope")); code != 1 || out != "" || !strings.Contains(errs, "nope") {
		t.Fatalf("diff --local of a missing folder: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if _, errs, code := alice.run(t, "diff", "99", "latest"); code != 1 || !strings.Contains(errs, "no snapshot 99") {
		t.Fatalf("diff with a missing snapshot: exit %d %q", code, errs)
	}
	// A local folder diff --local cannot read is an error, not "no changes" (found by
	// staticcheck: the error was shadowed).
	missing := filepath.Join(t.TempDir(), "missing")
	if out, errs, code := alice.run(t, "diff", "--local", missing, "docs"); code != 1 || out != "" || !strings.HasPrefix(errs, "veil: ") {
		t.Fatalf("diff --local of a missing folder: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// 'veil sync w1 /docs/w1' stores w1 as /docs/w1/w1 (cp -r's rule: sync stores a folder
// under its own name); a user who meant /docs/w1 itself saw "removed 0 entries" and his
// local deletions never reached it (session 17 walkthrough). The first such sync says so
// on stderr with the command meant; a sync into the parent, or again into the nested
// folder, says nothing.
func TestE2ESyncIntoFolderOfItsNameIsNoted(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "w1")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	if _, errOut, code := alice.run(t, "sync", src, "docs"); code != 0 || errOut != "" {
		t.Fatalf("sync into docs: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code := alice.run(t, "sync", src, "/docs/w1")
	want := "note: " + src + " is stored as docs/w1/w1, a new folder inside docs/w1: sync stores a folder under its own name, as cp -r does; to make docs/w1 this folder, give its parent: 'veil sync " + src + " /docs'\n"
	if code != 0 || errOut != want {
		t.Fatalf("sync into docs/w1: exit %d, stderr %q\nwant %q", code, errOut, want)
	}
	if _, errOut, code := alice.run(t, "sync", src, "/docs/w1"); code != 0 || errOut != "" {
		t.Fatalf("sync again into docs/w1: exit %d, stderr %q (said once, when the folder is new)", code, errOut)
	}
}
