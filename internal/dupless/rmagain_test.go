package dupless

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// An rm that deleted its records but could not publish its tree root (a full disk, a
// dropped connection) leaves names the root lists and the storage service no longer
// holds: ls and get report them as deleted and say "run that command again". Found by a
// user walkthrough: running the rm again said "not found", and so did rm -r of the
// folder above, so the folder reported damage for good. Now rm finishes what it began.
func TestUnpublishedRmIsFinishedByRmAgain(t *testing.T) {
	be := newBackend(t)
	fail := &noRootsBE{Backend: be}
	c := newClient(t, fail, mle.LocalKeys{})
	dir := filepath.Join(t.TempDir(), "d")
	for _, n := range []string{"a", "b", "sub/c", "sub/e", "gone/f", "gone/g/h"} {
		write(t, filepath.Join(dir, n), []byte("content of "+n))
	}
	if _, err := c.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	fail.on = true
	for _, p := range []string{"d/a", "d/sub/c", "d/gone"} {
		if _, err := c.Remove(ctx, p, true); err == nil || !strings.Contains(err.Error(), "tree root") {
			t.Fatalf("rm %s without roots: %v, want a tree root error", p, err)
		}
	}
	fail.on = false
	if es, err := c.List(ctx, "d", false); err != nil || !hasEntryErr(es) {
		t.Fatalf("ls after the unfinished rm: %v %+v, want a deleted entry (the test no longer makes the state it is about)", err, es)
	}
	if _, err := c.Remove(ctx, "d/a/", false); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("rm d/a/ (a folder only) of the unfinished file's name: %v, want not found", err)
	}
	if _, err := c.Remove(ctx, "d/a", false); err != nil {
		t.Fatalf("rm d/a again: %v", err)
	}
	if _, err := c.Remove(ctx, "d/sub", true); err != nil {
		t.Fatalf("rm -r d/sub, which held the other unfinished rm: %v", err)
	}
	if _, err := c.Remove(ctx, "d/gone", false); err == nil || !strings.Contains(err.Error(), "-r") {
		t.Fatalf("rm of the unfinished folder without -r: %v, want the -r hint", err)
	}
	if _, err := c.Remove(ctx, "d/gone", true); err != nil {
		t.Fatalf("rm -r d/gone again: %v", err)
	}
	es, err := c.List(ctx, "d", false)
	if err != nil {
		t.Fatalf("ls after finishing: %v", err)
	}
	if len(es) != 1 || es[0].Path != "d/b" || hasEntryErr(es) {
		t.Fatalf("ls d = %+v, want only d/b", es)
	}
	res, err := c.Check(ctx, CheckOptions{})
	if err != nil || len(res.Problems) != 0 {
		t.Fatalf("check: %v %+v", err, res.Problems)
	}
	out := t.TempDir()
	if sum, err := c.Get(ctx, "", out); err != nil || sum.Err() != nil {
		t.Fatalf("get everything: %v %v", err, sum.Err())
	}
	if _, err := os.Stat(filepath.Join(out, "d", "sub")); !os.IsNotExist(err) {
		t.Fatalf("d/sub still retrieved: %v", err)
	}
	// A name neither stored nor listed is still "not found".
	if _, err := c.Remove(ctx, "d/nothing", false); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("rm of a name never stored: %v", err)
	}
}

func hasEntryErr(es []Entry) bool {
	for _, e := range es {
		if e.Err != "" {
			return true
		}
	}
	return false
}
