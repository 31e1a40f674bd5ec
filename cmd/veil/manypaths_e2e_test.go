package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// rm and mkdir of several paths are one command each, as GNU rm and mkdir: one lock and one
// snapshot for all the paths, every path attempted, each failure one line (with --json an
// object), and exit 3 when some went through, 1 when none did. Found by a user walkthrough:
// 'veil rm a b c' made one snapshot per path and stopped at the first that failed.
func TestE2ESeveralPathsAreOneCommand(t *testing.T) {
	d := startServe(t, "alice")
	u := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	for _, n := range []string{"a.txt", "b.txt", "c.txt", "d.txt", "sub/e.txt"} {
		randomFile(t, filepath.Join(src, n), 10, n[0])
	}
	u.mustRun(t, "put", "-q", src)
	snapshots := func() int {
		var s []map[string]any
		if err := json.Unmarshal([]byte(u.mustRun(t, "snapshots", "--json")), &s); err != nil {
			t.Fatal(err)
		}
		return len(s)
	}
	n := snapshots()

	// A failure in the middle: the paths after it are removed too, in one snapshot.
	out, errs, code := u.run(t, "rm", "docs/a.txt", "docs/missing", "docs/sub", "docs/b.txt")
	wantErrs := "veil: docs/missing: not found\nveil: docs/sub is a directory (use -r to remove it and everything below)\n" +
		"veil: 2 of 4 paths failed; the others were removed\n"
	if code != 3 || out != "" || errs != wantErrs {
		t.Fatalf("rm with failing paths: exit %d, stdout %q, stderr %q; want exit 3, stderr %q", code, out, errs, wantErrs)
	}
	if ls := u.mustRun(t, "ls", "docs"); strings.Contains(ls, "a.txt") || strings.Contains(ls, "b.txt") || !strings.Contains(ls, "c.txt") {
		t.Fatalf("after rm: ls docs = %q", ls)
	}
	if got := snapshots(); got != n+1 {
		t.Fatalf("rm of 4 paths made %d snapshots, want 1", got-n)
	}

	// --json: an object per path, removed or failed, then the error object.
	out, _, code = u.run(t, "rm", "--json", "-r", "docs/c.txt", "nope", "docs/sub/")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 3 || len(lines) != 4 || !strings.HasPrefix(lines[0], `{"damaged":0,"dirs":0,"files":1,"removed":"docs/c.txt"}`) ||
		lines[1] != `{"error":"nope: not found","path":"nope"}` || !strings.Contains(lines[2], `"removed":"docs/sub/"`) ||
		lines[3] != `{"error":"1 of 3 paths failed; the others were removed","exit_code":3}` {
		t.Fatalf("rm --json with a failing path: exit %d, stdout %q", code, out)
	}

	// Nothing removed: exit 1, and no snapshot.
	n = snapshots()
	if _, errs, code := u.run(t, "rm", "nope", "docs/nope"); code != 1 || !strings.HasSuffix(errs, "veil: nothing removed: all 2 paths failed\n") {
		t.Fatalf("rm of missing paths: exit %d, stderr %q", code, errs)
	}
	// One path: its error alone, once, as before.
	if _, errs, code := u.run(t, "rm", "nope"); code != 1 || errs != "veil: nope: not found\n" {
		t.Fatalf("rm of one missing path: exit %d, stderr %q", code, errs)
	}

	// mkdir likewise.
	_, errs, code = u.run(t, "mkdir", "new/one", "docs/d.txt/x", "two")
	if code != 3 || strings.Count(errs, "\n") != 2 || !strings.Contains(errs, "veil: docs/d.txt") ||
		!strings.HasSuffix(errs, "veil: 1 of 3 paths failed; the others were created\n") {
		t.Fatalf("mkdir with a failing path: exit %d, stderr %q", code, errs)
	}
	if ls := u.mustRun(t, "ls"); !strings.Contains(ls, "new/") || !strings.Contains(ls, "two/") {
		t.Fatalf("after mkdir: ls = %q", ls)
	}
	if got := snapshots(); got != n+1 {
		t.Fatalf("mkdir of 3 paths (and an rm that removed nothing) made %d snapshots, want 1", got-n)
	}
}
