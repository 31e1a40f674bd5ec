package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// History through the real binary and servers: a changed file keeps its old version (log,
// get --version, get --at), ls shows a snapshot, forget + prune drop what no retained
// snapshot holds and nothing else.
func TestE2EHistory(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "proj")
	f := filepath.Join(src, "notes.txt")
	v1 := randomFile(t, f, 700<<10, 1)
	randomFile(t, filepath.Join(src, "doc", "old.txt"), 1000, 2)
	alice.mustRun(t, "put", src)
	v2 := randomFile(t, f, 900<<10, 3)
	os.Chtimes(f, time.Now(), time.Now().Add(time.Minute))
	alice.mustRun(t, "put", src)
	alice.mustRun(t, "rm", "proj/doc/old.txt")

	var vs []struct {
		Version  int       `json:"version"`
		Snapshot uint64    `json:"snapshot"`
		Time     time.Time `json:"time"`
		Size     int64     `json:"size"`
	}
	if err := json.Unmarshal([]byte(alice.mustRun(t, "log", "--json", "proj/notes.txt")), &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || vs[0].Version != 1 || vs[0].Size != int64(len(v1)) || vs[1].Size != int64(len(v2)) {
		t.Fatalf("log --json = %+v", vs)
	}
	if out := alice.mustRun(t, "log", "proj/doc/old.txt"); !strings.Contains(out, "deleted") {
		t.Fatalf("log of a removed file:\n%s", out)
	}
	got := func(args ...string) []byte {
		t.Helper()
		out := filepath.Join(t.TempDir(), "out")
		alice.mustRun(t, append(append([]string{"get"}, args...), out)...)
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(got("--version", "1", "proj/notes.txt"), v1) {
		t.Fatal("get --version 1 did not return the first version")
	}
	if !bytes.Equal(got("proj/notes.txt"), v2) {
		t.Fatal("get without --version did not return the newest version")
	}
	at := vs[1].Time.Add(-time.Nanosecond).Format(time.RFC3339Nano)
	if !bytes.Equal(got("--at", at, "proj/notes.txt"), v1) {
		t.Fatal("get --at before the second put did not return the first version")
	}
	if out := alice.mustRun(t, "ls", "--snapshot", "1", "proj/doc"); !strings.Contains(out, "old.txt") {
		t.Fatalf("ls --snapshot 1 proj/doc:\n%s", out)
	}
	if out := alice.mustRun(t, "ls", "proj/doc"); strings.Contains(out, "old.txt") {
		t.Fatalf("ls proj/doc shows the removed file:\n%s", out)
	}
	var snaps []map[string]any
	json.Unmarshal([]byte(alice.mustRun(t, "snapshots", "--json")), &snaps)
	if len(snaps) != 3 {
		t.Fatalf("snapshots: %v", snaps)
	}

	// Prune keeps everything a snapshot holds; forget drops snapshots, then prune frees.
	var pr map[string]float64
	json.Unmarshal([]byte(alice.mustRun(t, "prune", "--grace", "0s", "--json")), &pr)
	if pr["chunks_removed"] != 0 || pr["versions"] < 2 {
		t.Fatalf("prune with all snapshots: %v", pr)
	}
	if !bytes.Equal(got("--version", "1", "proj/notes.txt"), v1) {
		t.Fatal("version 1 unreadable after prune")
	}
	if out := alice.mustRun(t, "forget", "--keep-last", "1", "--dry-run"); !strings.Contains(out, "would drop 2 (1, 2)") {
		t.Fatalf("forget --dry-run:\n%s", out)
	}
	var fr struct {
		Remove []map[string]any `json:"remove"`
		Prune  map[string]float64
	}
	json.Unmarshal([]byte(alice.mustRun(t, "forget", "--keep-last", "1", "--prune", "--grace", "0s", "--json")), &fr)
	if len(fr.Remove) != 2 || fr.Prune["chunks_removed"] < 2 {
		t.Fatalf("forget --prune: %+v", fr)
	}
	if !bytes.Equal(got("--version", "1", "proj/notes.txt"), v2) {
		t.Fatal("after forget, version 1 is not the only version left")
	}
	_, errs, code := alice.run(t, "get", "--version", "2", "proj/notes.txt", t.TempDir()+"/x")
	if code != 1 || !strings.Contains(errs, "has no version 2") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("get --version 2 after forget: exit %d, %q", code, errs)
	}
	for _, bad := range [][]string{
		{"get", "--at", "yesterday", "proj/notes.txt"},
		{"get", "--at", "1h", "--version", "1", "proj/notes.txt"},
		{"forget"},
	} {
		_, errs, code := alice.run(t, bad...)
		if code != 2 || strings.Count(errs, "\n") != 2 || !strings.Contains(errs, "\nusage: veil "+bad[0]+" ") {
			t.Fatalf("veil %v: exit %d, %q; want 2, one line and the usage line", bad, code, errs)
		}
	}
}
