package main

import (
	"strings"
	"testing"
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
