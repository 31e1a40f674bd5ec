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
