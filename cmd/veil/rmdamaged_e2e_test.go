package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// flipFile flips one byte in the middle of the one file glob matches.
func flipFile(t *testing.T, glob string) {
	t.Helper()
	files, _ := filepath.Glob(glob)
	if len(files) != 1 {
		t.Fatalf("%s: %v", glob, files)
	}
	b, _ := os.ReadFile(files[0])
	b[len(b)/2] ^= 1
	os.WriteFile(files[0], b, 0o600)
}

// Found by review: rm of a file whose record is damaged succeeded, and stats and prune then
// failed for good with "kept version ... does not match its name". rm now says it removed
// a damaged record and keeps nothing of it; stats and prune go on; check names the
// version its snapshot lists as not stored. A kept version damaged on the storage is
// named by check, counted by stats, and keeps prune from deleting chunks (exit 3, with
// the repair: forget the snapshots listing it), until forget drops them.
func TestE2ERmDamagedThenStatsAndPrune(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	u := newUser(t, "alice", "--storage", store, "--no-keyserver")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "a.bin"), 300_000, 1)
	u.mustRun(t, "put", filepath.Join(src, "a.bin"))
	flipFile(t, filepath.Join(store, "*.key"))
	randomFile(t, filepath.Join(src, "b.txt"), 1000, 2)
	u.mustRun(t, "put", filepath.Join(src, "b.txt"))

	out, errs, code := u.run(t, "rm", "--json", "a.bin")
	if code != 0 || !strings.Contains(errs, "damaged") || !strings.Contains(out, `"damaged":1`) {
		t.Fatalf("rm of a damaged file: exit %d\n%s\nstderr %s", code, out, errs)
	}
	u.mustRun(t, "stats")
	if out := u.mustRun(t, "prune", "--grace", "0s"); !strings.Contains(out, "removed 1 unreferenced chunk and") {
		t.Fatalf("prune after rm of a damaged file:\n%s", out)
	}
	if out, _, code := u.run(t, "check"); code != 3 || !strings.Contains(out, "damaged: a.bin (snapshot ") || !strings.Contains(out, "veil forget") {
		t.Fatalf("check after rm of a damaged file: exit %d\n%s", code, out)
	}

	randomFile(t, filepath.Join(src, "b.txt"), 2000, 3)
	os.Chtimes(filepath.Join(src, "b.txt"), time.Now(), time.Now().Add(time.Minute))
	u.mustRun(t, "put", filepath.Join(src, "b.txt"))
	flipFile(t, filepath.Join(store, ".veil", "versions", "*", "*"))
	if out := u.mustRun(t, "stats"); !strings.Contains(out, "versions damaged") {
		t.Fatalf("stats with a damaged version:\n%s", out)
	}
	if out, _, code := u.run(t, "check"); code != 3 || !strings.Contains(out, "damaged: b.txt (snapshot ") || !strings.Contains(out, "prune deletes no chunks") {
		t.Fatalf("check of a damaged version: exit %d\n%s", code, out)
	}
	out, errs, code = u.run(t, "prune", "--grace", "0s")
	if code != 3 || !strings.Contains(errs, "b.txt (snapshot ") || !strings.Contains(errs, "veil forget") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("prune with a damaged version: exit %d\n%s\nstderr %s", code, out, errs)
	}
	u.mustRun(t, "forget", "--keep-last", "1", "--prune", "--grace", "0s")
	if out, _, code := u.run(t, "check", "--read-data"); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("check after forget --prune: exit %d\n%s", code, out)
	}
}
