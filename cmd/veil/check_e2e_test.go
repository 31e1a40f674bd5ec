package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// veil check and veil stats through the real binary and servers: a sound tree checks
// clean (exit 0), a tampered chunk on the storage service is found by --read-data and
// named by file (exit 3); stats counts files, versions and bytes.
func TestE2ECheckAndStats(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "dir")
	randomFile(t, filepath.Join(src, "victim.bin"), 200_000, 5)
	randomFile(t, filepath.Join(src, "fine.txt"), 1000, 6)
	alice.mustRun(t, "put", src)
	randomFile(t, filepath.Join(src, "fine.txt"), 2000, 7)
	os.Chtimes(filepath.Join(src, "fine.txt"), time.Now(), time.Now().Add(time.Minute))
	alice.mustRun(t, "put", src)

	var st map[string]float64
	json.Unmarshal([]byte(alice.mustRun(t, "stats", "--json")), &st)
	if st["files"] != 2 || st["bytes"] != 202_000 || st["versions"] != 3 || st["snapshots"] != 2 || st["chunks"] != 3 {
		t.Fatalf("stats --json = %v", st)
	}
	if out := alice.mustRun(t, "stats"); !strings.Contains(out, "file versions") {
		t.Fatalf("stats:\n%s", out)
	}
	if out := alice.mustRun(t, "check", "--read-data"); !strings.Contains(out, "no damage") || !strings.Contains(out, "3 read and verified") {
		t.Fatalf("check of a sound tree:\n%s", out)
	}

	flipLargestBlob(t, d.dir, 200_000)
	out, errs, code := alice.run(t, "check", "--read-data-subset", "100%")
	if code != 3 || !strings.Contains(out, "damaged: dir/victim.bin") || strings.Contains(out, "fine.txt") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("check of a tampered chunk: exit %d\n%s\nstderr %q", code, out, errs)
	}
	var res struct {
		Problems []struct{ Path, Error string }
	}
	out, _, code = alice.run(t, "check", "--read-data", "--json")
	// The report, then (exit 3) the error object: docs/scripting.md.
	if json.NewDecoder(strings.NewReader(out)).Decode(&res); code != 3 || lastJSON(t, out)["exit_code"] != float64(3) || len(res.Problems) != 1 || res.Problems[0].Path != "dir/victim.bin" {
		t.Fatalf("check --json: exit %d %s", code, out)
	}
	// The repair check names: put the original again with --force (found by a user
	// walkthrough: its chunks were reused, and the file stayed damaged).
	if out, _, _ := alice.run(t, "check", "--read-data"); !strings.Contains(out, "veil put --force") {
		t.Fatalf("check names no repair:\n%s", out)
	}
	alice.mustRun(t, "put", "--force", src)
	if out, _, code := alice.run(t, "check", "--read-data"); code != 0 || !strings.Contains(out, "no damage") {
		t.Fatalf("check after put --force: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"check", "--read-data-subset", "0%"}, {"check", "--read-data-subset", "x"}, {"check", "--read-data", "--read-data-subset", "5%"}} {
		if _, errs, code := alice.run(t, bad...); code != 2 || strings.Count(errs, "\n") != 2 || !strings.Contains(errs, "\nusage: veil check ") {
			t.Fatalf("veil %v: exit %d %q", bad, code, errs)
		}
	}
}
