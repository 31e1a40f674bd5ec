package main

import (
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
)

// check --repair names each folder it found without a record once: a folder an interrupted
// mv covers is said left, not also "folder without a record" above it. Found by review (its
// author noted it): the leftover folders were listed twice.
func TestCheckRepairNamesLeftFoldersOnce(t *testing.T) {
	res := &dupless.CheckResult{Problems: []dupless.FileError{}, Unrecorded: []string{"a", "old", "old/d0"}}
	rep := &dupless.FolderRepair{Recorded: []string{"a"}, Pending: []string{"old", "old/d0"}}
	var b strings.Builder
	printCheck(&b, res, rep)
	out := b.String()
	for _, d := range []string{"old/", "old/d0/"} {
		if n := strings.Count(out, ": "+d+"\n"); n != 1 {
			t.Errorf("%s named %d times:\n%s", d, n, out)
		}
	}
	if !strings.Contains(out, "folder without a record: a/\n") || !strings.Contains(out, "wrote the missing record of 1 folder") {
		t.Errorf("the recorded folder:\n%s", out)
	}
	b.Reset()
	printCheck(&b, res, nil) // without --repair: every one, once
	for _, d := range res.Unrecorded {
		if n := strings.Count(b.String(), "folder without a record: "+d+"/\n"); n != 1 {
			t.Errorf("check: %s named %d times:\n%s", d, n, b.String())
		}
	}
}

// check names each entry an interrupted mv left as pending, with the mv to run, and calls
// nothing damaged for it nor advises 'put --force'. Found by the session 17 review: after
// a killed 'veil mv d e' check said "damaged" of every entry of e.
func TestCheckNamesPendingMoveEntries(t *testing.T) {
	note := "left by an interrupted 'veil mv d e', which is pending: run it again, or run 'veil mv --resume', to finish it"
	res := &dupless.CheckResult{Problems: []dupless.FileError{}, Unrecorded: []string{},
		Pending: []dupless.FileError{{Path: "e/", Err: note}, {Path: "e/f1", Err: note}}}
	var b strings.Builder
	printCheck(&b, res, nil)
	out := b.String()
	for _, p := range []string{"e/", "e/f1"} {
		if !strings.Contains(out, "pending: "+p+": "+note+"\n") {
			t.Errorf("%s not named pending:\n%s", p, out)
		}
	}
	if strings.Contains(out, "damaged") || strings.Contains(out, "--force") || !strings.Contains(out, ": no damage\n") {
		t.Errorf("a pending mv read as damage:\n%s", out)
	}
}
