package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A damaged old snapshot, through the binary: forget, prune, log, snapshots name it (exit 3) and say
// --drop-damaged; check reports it (exit 3, --json too) and checks the rest; forget
// --drop-damaged drops it with the policy, one line each; then everything goes through.
// Found by review: each of them stopped on the damaged root, forget included.
func TestE2EForgetDropDamaged(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	f := filepath.Join(t.TempDir(), "notes.txt")
	for i := range 4 { // snapshots 1..4
		randomFile(t, f, 2000, byte(i))
		os.Chtimes(f, time.Now(), time.Now().Add(time.Duration(i)*time.Minute))
		u.mustRun(t, "put", f)
	}
	flipFile(t, filepath.Join(store, ".veil", "roots", "*2"))

	for _, args := range [][]string{{"forget", "--keep-last", "1"}, {"prune", "--grace", "0s"}, {"log", "notes.txt"}, {"ls", "--at", "1m"}} {
		_, errs, code := u.run(t, args...)
		if code != 3 || !strings.Contains(errs, "snapshot 2 is damaged") || !strings.Contains(errs, "veil forget --drop-damaged") {
			t.Errorf("%s with snapshot 2 damaged: exit %d, stderr %s", args[0], code, errs)
		}
	}
	// The listing shows the others and the damaged one, and exits 3 as check does.
	out, errs, code := u.run(t, "snapshots")
	if code != 3 || !strings.Contains(out, "\n2         damaged") || !strings.Contains(out, "\nsnapshot 2: tree root 0000000000000002: ") || strings.Count(out, "\n") != 6 ||
		!strings.Contains(errs, "1 damaged snapshot cannot be read; 'veil forget --drop-damaged' drops it") {
		t.Errorf("snapshots with snapshot 2 damaged: exit %d\n%q%s", code, out, errs)
	}
	if out, _, code := u.run(t, "snapshots", "--json"); code != 3 || !strings.Contains(out, `{"snapshot":2,"time":"0001-01-01T00:00:00Z","files":0,"records":0,"sha256":"","damaged":"tree root 0000000000000002: `) {
		t.Errorf("snapshots --json with snapshot 2 damaged: exit %d\n%s", code, out)
	}
	if out, _, code := u.run(t, "check"); code != 3 || !strings.Contains(out, "damaged: (snapshot 2): ") ||
		!strings.Contains(out, "checked 1 file, 0 dirs, 4 snapshots (2 older versions)") {
		t.Errorf("check with snapshot 2 damaged: exit %d\n%s", code, out)
	}
	if out, _, code := u.run(t, "check", "--json"); code != 3 || !strings.Contains(out, `"snapshots_damaged":1`) {
		t.Errorf("check --json with snapshot 2 damaged: exit %d\n%s", code, out)
	}
	out = u.mustRun(t, "forget", "--drop-damaged", "--keep-last", "2")
	if !strings.Contains(out, "dropped damaged snapshot 2: ") || !strings.Contains(out, "kept 2 snapshots; dropped 2 (1, 2)") {
		t.Fatalf("forget --drop-damaged:\n%s", out)
	}
	u.mustRun(t, "prune", "--grace", "0s")
	u.mustRun(t, "check")
	u.mustRun(t, "log", "notes.txt")
	if out := u.mustRun(t, "snapshots"); strings.Count(out, "\n") != 3 { // a header, 3 and 4
		t.Errorf("snapshots after the drop:\n%s", out)
	}
}
