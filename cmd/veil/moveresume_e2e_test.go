package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'veil mv --resume' with a mark whose source and destination are both gone (an older veil,
// which does not see marks, removed them) has nothing left to finish: it drops the mark,
// says so in one line, and exits 0; the mv typed again fails on its source, saying the
// mark is dropped. Found by review: it reported "finishing 'veil mv x y':
// x: not found" (exit 1) although the mark was gone, and the next run said there was
// nothing to finish. The mark is one veil wrote (a mv that kept a file), put back after
// its folders were removed.
func TestE2EResumeDropsMoveWithNothingLeft(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	dir := t.TempDir()
	randomFile(t, filepath.Join(dir, "x", "a"), 10, 1)
	randomFile(t, filepath.Join(dir, "y", "a"), 10, 2)
	u.mustRun(t, "put", "-q", filepath.Join(dir, "x"))
	u.mustRun(t, "put", "-q", filepath.Join(dir, "y"))
	if errs := u.mustFail(t, "mv", "--resume", "x", "y"); !strings.Contains(errs, "another version") {
		t.Fatalf("mv --resume onto another version: %q", errs)
	}
	settled, err := filepath.Glob(filepath.Join(store, ".veil", "moves-settled", "*"))
	if err != nil || len(settled) != 1 {
		t.Fatalf("the kept mv's mark: %v %v", settled, err)
	}
	mark, err := os.ReadFile(settled[0])
	if err != nil {
		t.Fatal(err)
	}
	u.mustRun(t, "rm", "-r", "x", "y") // drops the mark
	putBack := func() {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(settled[0]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settled[0], mark, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	putBack()
	// The mv typed again: x is not found (exit 1), and the line says the mark is dropped.
	if errs := u.mustFail(t, "mv", "x", "y"); errs != "veil: x: not found, nor is y: nothing was left of the interrupted mv to move, and its mark is dropped\n" {
		t.Fatalf("mv x y with nothing left: %q", errs)
	}
	if out := u.mustRun(t, "mv", "--resume"); out != "no interrupted mv to finish\n" {
		t.Fatalf("mv --resume after mv x y: %q", out)
	}
	putBack()
	out, errs, code := u.run(t, "mv", "--resume")
	if code != 0 || out != "dropped the interrupted mv of x to y: neither exists any more, nothing was left to move\n" || errs != "" {
		t.Fatalf("mv --resume with nothing left: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out := u.mustRun(t, "mv", "--resume"); out != "no interrupted mv to finish\n" {
		t.Fatalf("mv --resume again: %q", out)
	}
}
