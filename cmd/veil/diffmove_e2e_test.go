package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// veil diff between snapshots names a file or folder moved (locally then synced, or by
// veil mv) as one "R" line; a renamed and changed file stays "-" and "+", a copy "+";
// among identical files the pick is the documented one.
func TestE2EDiffMoves(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := filepath.Join(t.TempDir(), "docs")
	randomFile(t, filepath.Join(src, "a.txt"), 100, 1)
	randomFile(t, filepath.Join(src, "c.txt"), 100, 2)
	randomFile(t, filepath.Join(src, "d.txt"), 100, 3)
	randomFile(t, filepath.Join(src, "photos", "p1.jpg"), 300, 4)
	randomFile(t, filepath.Join(src, "photos", "y", "p2.jpg"), 300, 5)
	os.MkdirAll(filepath.Join(src, "photos", "empty"), 0o755)
	same := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, n := range []string{"a", "b", "c"} { // three files of one content and time
		p := filepath.Join(src, "t", n+".txt")
		randomFile(t, p, 100, 6)
		os.Chtimes(p, same, same)
	}
	alice.mustRun(t, "put", src) // snapshot 1

	mv := func(from, to string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(src, to)), 0o755)
		if err := os.Rename(filepath.Join(src, from), filepath.Join(src, to)); err != nil {
			t.Fatal(err)
		}
	}
	mv("a.txt", "b.txt")     // renamed
	mv("photos", "pictures") // a folder moved whole
	mv("c.txt", "c2.txt")    // renamed and changed: - and +
	randomFile(t, filepath.Join(src, "c2.txt"), 100, 7)
	b, _ := os.ReadFile(filepath.Join(src, "d.txt"))
	os.WriteFile(filepath.Join(src, "d-copy.txt"), b, 0o644) // a copy: +
	fi, _ := os.Stat(filepath.Join(src, "d.txt"))
	os.Chtimes(filepath.Join(src, "d-copy.txt"), fi.ModTime(), fi.ModTime())
	mv("t/c.txt", "u/c.txt") // the same name: takes t/c.txt
	mv("t/a.txt", "v.txt")   // no name in common: the first by path, t/a.txt
	os.Remove(filepath.Join(src, "t", "b.txt"))
	alice.mustRun(t, "sync", src) // snapshot 2

	want := "R docs/a.txt -> docs/b.txt\n" +
		"- docs/c.txt\n" +
		"+ docs/c2.txt\n" +
		"+ docs/d-copy.txt\n" +
		"R docs/photos/ -> docs/pictures/\n" +
		"- docs/t/b.txt\n" + // t/ stays: the local folder is there, empty

		"+ docs/u/\n" +
		"R docs/t/c.txt -> docs/u/c.txt\n" +
		"R docs/t/a.txt -> docs/v.txt\n"
	if out := alice.mustRun(t, "diff", "1", "2"); out != want {
		t.Fatalf("diff 1 2:\n%s\nwant:\n%s", out, want)
	}
	var chs []map[string]any
	json.Unmarshal([]byte(alice.mustRun(t, "diff", "1", "2", "--json")), &chs)
	found := false
	for _, ch := range chs {
		if ch["path"] == "docs/pictures" {
			found = ch["change"] == "moved" && ch["from"] == "docs/photos" && ch["dir"] == true
		}
	}
	if !found {
		t.Fatalf("diff --json: no folder move: %v", chs)
	}
	// Only within PATH: moved out of it, the folder is removed.
	if out := alice.mustRun(t, "diff", "1", "2", "docs/photos"); out != "- docs/photos/\n- docs/photos/empty/\n- docs/photos/p1.jpg\n- docs/photos/y/\n- docs/photos/y/p2.jpg\n" {
		t.Fatalf("diff 1 2 docs/photos:\n%s", out)
	}

	// veil mv (records sealed anew for their new names, same content) of a folder into
	// a new one and of a file.
	alice.mustRun(t, "mv", "docs/pictures", "Archive/pictures")
	alice.mustRun(t, "mv", "docs/b.txt", "docs/u/b.txt")
	want = "+ Archive/\n" +
		"R docs/pictures/ -> Archive/pictures/\n" +
		"R docs/b.txt -> docs/u/b.txt\n"
	if out := alice.mustRun(t, "diff", "2", "latest"); out != want {
		t.Fatalf("diff 2 latest:\n%s\nwant:\n%s", out, want)
	}
	// Within docs/t, what moved out of it is removed.
	if out := alice.mustRun(t, "diff", "1", "latest", "docs/t"); out != "- docs/t/a.txt\n- docs/t/b.txt\n- docs/t/c.txt\n" {
		t.Fatalf("diff 1 latest docs/t:\n%s", out)
	}
}
