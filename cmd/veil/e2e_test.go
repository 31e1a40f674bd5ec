package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// Two users with different keys store overlapping data: the storage service keeps one
// copy of what they share, and each reads back exactly their own bytes.
func TestE2ETwoUsersDedup(t *testing.T) {
	d := startServe(t, "alice", "bob")
	alice, bob := d.newUser(t, "alice"), d.newUser(t, "bob")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "shared", "big.bin"), 12<<20, 1)
	randomFile(t, filepath.Join(src, "shared", "small.txt"), 3000, 2)
	randomFile(t, filepath.Join(src, "alice-only.bin"), 1<<20, 3)
	alice.mustRun(t, "put", filepath.Join(src, "shared"), filepath.Join(src, "alice-only.bin"), "--to", "mine")
	before := d.stats(t)["physical_bytes"]
	randomFile(t, filepath.Join(src, "bob-only.bin"), 1<<20, 4)
	bob.mustRun(t, "put", filepath.Join(src, "shared"), filepath.Join(src, "bob-only.bin"), "--to", "data")
	after := d.stats(t)
	grew := after["physical_bytes"] - before
	// Bob added 1 MiB of his own plus records; the 12 MiB he shares with alice is not stored again.
	if grew > 1.5*(1<<20) || grew < 1<<20 {
		t.Fatalf("physical bytes grew by %.0f for bob's 13 MiB, want about 1 MiB", grew)
	}
	if after["logical_bytes"] < 2*13<<20 {
		t.Fatalf("logical bytes %.0f: both users' data should count", after["logical_bytes"])
	}
	out := t.TempDir()
	bob.mustRun(t, "get", "data", filepath.Join(out, "bob"))
	alice.mustRun(t, "get", "mine", filepath.Join(out, "alice"))
	sameFile(t, filepath.Join(src, "shared", "big.bin"), filepath.Join(out, "bob", "shared", "big.bin"))
	sameFile(t, filepath.Join(src, "bob-only.bin"), filepath.Join(out, "bob", "bob-only.bin"))
	sameFile(t, filepath.Join(src, "alice-only.bin"), filepath.Join(out, "alice", "alice-only.bin"))
	// Alice sees none of bob's names.
	if ls := alice.mustRun(t, "ls"); strings.TrimSpace(ls) != "mine/" {
		t.Fatalf("alice's root: %q", ls)
	}
}

// An edit in the middle of a 100 MiB file re-sends only the chunks around it, and the
// storage service stores only those.
func TestE2EEditLargeFile(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	data := randomFile(t, filepath.Join(src, "disk.img"), 100<<20, 9)
	s1 := alice.summary(t, "put", filepath.Join(src, "disk.img"))
	before := d.stats(t)["physical_bytes"]
	copy(data[50<<20:], "a small edit in the middle of the file")
	os.WriteFile(filepath.Join(src, "disk.img"), data, 0o644)
	s2 := alice.summary(t, "put", filepath.Join(src, "disk.img"))
	if s2["chunks_uploaded"].(float64) > 2 || s2["chunks_kept"].(float64) < s1["chunks"].(float64)-2 {
		t.Fatalf("after the edit: %v uploaded, %v kept of %v chunks", s2["chunks_uploaded"], s2["chunks_kept"], s2["chunks"])
	}
	if grew := d.stats(t)["physical_bytes"] - before; grew > 17<<20 {
		t.Fatalf("physical bytes grew by %.0f for a one-chunk edit", grew)
	}
	out := filepath.Join(t.TempDir(), "disk.img")
	alice.mustRun(t, "get", "disk.img", out)
	sameFile(t, filepath.Join(src, "disk.img"), out)
}

// Corrupting content on the storage service fails that file, by name, with exit 3; the
// other files arrive.
func TestE2ETamperedBlob(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	randomFile(t, filepath.Join(src, "dir", "victim.bin"), 200_000, 5)
	os.WriteFile(filepath.Join(src, "dir", "fine.txt"), []byte("fine"), 0o644)
	alice.mustRun(t, "put", filepath.Join(src, "dir"))
	// Flip one byte in the largest blob: the victim's ciphertext.
	flipLargestBlob(t, d.dir, 200_000)
	out := t.TempDir()
	_, errs, code := alice.run(t, "get", "dir", filepath.Join(out, "dir"))
	if code != 3 || !strings.Contains(errs, "victim.bin") || !strings.Contains(errs, "integrity") {
		t.Fatalf("get of a tampered file: exit %d, stderr %q", code, errs)
	}
	// Said once, by its own line; the last line counts (found by a user walkthrough: a
	// single failure was printed twice).
	if strings.Count(errs, "victim.bin") != 1 || !strings.HasSuffix(errs, "\nveil: 1 file failed (named above)\n") {
		t.Fatalf("get of a tampered file: stderr %q, want the file once and then the count", errs)
	}
	if _, err := os.Stat(filepath.Join(out, "dir", "victim.bin")); err == nil {
		t.Fatal("the tampered file reached its destination")
	}
	sameFile(t, filepath.Join(src, "dir", "fine.txt"), filepath.Join(out, "dir", "fine.txt"))
}

// Renames, unicode, deep paths, find and rm through the CLI.
func TestE2ENamesAndMoves(t *testing.T) {
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := t.TempDir()
	deep := filepath.Join(src, "top", "ünïcødé dir", "a", "b", "c", "d", "e", "f", "g", "h")
	os.MkdirAll(deep, 0o755)
	os.WriteFile(filepath.Join(deep, "日本語 ファイル.txt"), []byte("deep unicode"), 0o640)
	os.MkdirAll(filepath.Join(src, "top", "empty"), 0o700)
	os.Symlink("ünïcødé dir", filepath.Join(src, "top", "link"))
	alice.mustRun(t, "put", filepath.Join(src, "top"))
	if got := alice.mustRun(t, "find", "日本語 ファイル.txt"); !strings.Contains(got, "top/ünïcødé dir/a/b/c/d/e/f/g/h/日本語 ファイル.txt") {
		t.Fatalf("find: %q", got)
	}
	alice.mustRun(t, "mv", "top", "renamed/top")
	alice.mustRun(t, "mv", "renamed/top/ünïcødé dir/a/b/c/d/e/f/g/h/日本語 ファイル.txt", "renamed/moved.txt")
	out := t.TempDir()
	alice.mustRun(t, "get", "renamed", filepath.Join(out, "r"))
	if b, err := os.ReadFile(filepath.Join(out, "r", "moved.txt")); err != nil || string(b) != "deep unicode" {
		t.Fatalf("moved file: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(out, "r", "top", "empty")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("empty dir: %v %v", fi, err)
	}
	if l, _ := os.Readlink(filepath.Join(out, "r", "top", "link")); l != "ünïcødé dir" {
		t.Fatalf("symlink: %q", l)
	}
	if _, _, code := alice.run(t, "get", "top", filepath.Join(out, "old")); code == 0 {
		t.Fatal("the old name still reads after mv")
	}
	alice.mustRun(t, "rm", "-r", "renamed/top")
	if ls := alice.mustRun(t, "ls", "renamed"); strings.TrimSpace(ls) != "moved.txt" {
		t.Fatalf("after rm: %q", ls)
	}
}

// The key server dies in the middle of a run: the remaining files are stored under random
// keys, everything reads back, and the summary says how many fell back and why.
func TestE2EKeyServerKilledMidRun(t *testing.T) {
	ks, cred := startKeyServer(t)
	storageDir := t.TempDir()
	alice := newUser(t, "alice", "--storage", storageDir, "--ks-credential", cred)
	src := t.TempDir()
	const n = 1500
	for i := range n {
		randomFile(t, filepath.Join(src, "files", fmt.Sprintf("f%04d", i)), 2000+i, byte(i))
	}
	randomFile(t, filepath.Join(src, "first", "one"), 5000, 200)
	alice.mustRun(t, "put", filepath.Join(src, "first")) // the KS works
	// Kill the key server once the put below has stored 100 files: mid-run, for certain.
	// The watcher ends with the put, whether it killed the key server or not.
	putDone := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		for countRecords(storageDir) < 101 {
			select {
			case <-putDone:
				killed <- false
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
		ks.Kill()
		killed <- true
	}()
	s := func() map[string]any {
		defer close(putDone) // also when summary fails the test
		return alice.summary(t, "put", "-j", "2", filepath.Join(src, "files"))
	}()
	if !<-killed {
		t.Fatal("the put ended before it stored 101 files: the key server was never killed")
	}
	<-ks.Done()
	fb, _ := s["fallback"].(map[string]any)
	fell := 0.0
	for why, k := range fb {
		fell += k.(float64)
		if !strings.Contains(why, "key server") {
			t.Errorf("fallback reason %q does not name the key server", why)
		}
	}
	if s["files"].(float64) != n || fell == 0 || fell >= n-50 {
		t.Fatalf("stored %v of %d files, %v of them without dedup: want all stored, some of each", s["files"], n, fell)
	}
	s2 := alice.summary(t, "put", filepath.Join(src, "first"), "--to", "again") // the KS stays dead
	if fb, _ := s2["fallback"].(map[string]any); len(fb) == 0 {
		t.Fatalf("no fallback reported with the key server dead: %v", s2)
	}
	out := t.TempDir()
	alice.mustRun(t, "get", "files", filepath.Join(out, "files"))
	diffTrees(t, filepath.Join(src, "files"), filepath.Join(out, "files"))
	ls := alice.mustRun(t, "ls", "-l", "again/first")
	if !strings.Contains(ls, "*one") {
		t.Fatalf("ls -l does not mark the fallback file: %q", ls)
	}
}

// startKeyServer runs a key server (serve flags extra) with one client, alice, and returns
// the process and alice's credential file.
func startKeyServer(t *testing.T, extra ...string) (*testutil.Process, string) {
	t.Helper()
	ksDir := filepath.Join(t.TempDir(), "ks")
	ksAddr, udp := testutil.Addr(testutil.FreePort(t)), testutil.Addr(testutil.FreePort(t))
	run := func(args ...string) {
		if out, err := execVeil(args...); err != nil {
			t.Fatalf("veil %v: %v\n%s", args, err, out)
		}
	}
	run("keyserver", "init", "--dir", ksDir, "--url", "https://"+ksAddr, "--udp", udp)
	cred := filepath.Join(t.TempDir(), "alice.ks.json")
	run("keyserver", "client", "add", "alice", "--dir", ksDir, "--out", cred)
	ks := testutil.Start(t, veilBin, append([]string{"keyserver", "serve", "--dir", ksDir, "--https", ksAddr, "--udp", udp}, extra...)...)
	testutil.WaitTCP(t, ksAddr, 20*time.Second)
	return ks, cred
}

// A key server in a delay mode answers one query of a client at a time and refuses the
// others; put (16 files in parallel, two key requests in flight) waits its turn instead of
// falling back to random keys.
func TestE2EDelayModeKeyServer(t *testing.T) {
	_, cred := startKeyServer(t, "--ratelimit", "fixed", "--ratelimit-delay", "5ms")
	alice := newUser(t, "alice", "--storage", t.TempDir(), "--ks-credential", cred)
	src := t.TempDir()
	const n = 64
	for i := range n {
		randomFile(t, filepath.Join(src, "files", fmt.Sprintf("f%02d", i)), 3000+i, byte(i))
	}
	s := alice.summary(t, "put", filepath.Join(src, "files"))
	if fb, _ := s["fallback"].(map[string]any); len(fb) != 0 || s["files"].(float64) != n {
		t.Fatalf("stored %v of %d files, fallback %v: want all, none without dedup", s["files"], n, fb)
	}
}

// countRecords counts the key records in a local storage directory.
func countRecords(dir string) int {
	n := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".key") {
			n++
		}
		return nil
	})
	return n
}

// Ten thousand small files in one run, through the CLI, to a local directory backend.
func TestE2ETenThousandFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	alice := newUser(t, "alice", "--storage", t.TempDir(), "--no-keyserver")
	src := smallFilesTree(t, "many", 10_000, 100)
	s := alice.summary(t, "put", src)
	if s["files"].(float64) != 10_000 {
		t.Fatalf("stored %v files", s["files"])
	}
	out := filepath.Join(t.TempDir(), "many")
	g := alice.summary(t, "get", "many", out)
	if g["files"].(float64) != 10_000 {
		t.Fatalf("retrieved %v files", g["files"])
	}
	diffTrees(t, src, out)
}

// A lone small file put into a namespace whose tree root is past 64 KiB (2,000 records)
// still goes without the lock: its root travels as the batch's one large object
// (storage.LargeBatcher), through a real 'veil serve'. The file reads back and check is
// clean.
func TestE2ELonePutLargeNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	d := startServe(t, "alice")
	alice := d.newUser(t, "alice")
	src := smallFilesTree(t, "tree", 2_000, 20)
	alice.mustRun(t, "put", "-q", src)
	lone := filepath.Join(t.TempDir(), "lone.txt")
	os.WriteFile(lone, []byte("one more file\n"), 0o644)
	_, stderr, code := alice.run(t, "put", "-v", lone, "tree/d07")
	if code != 0 || !strings.Contains(stderr, "put without the lock: one batch") {
		t.Fatalf("lone put: exit %d, log:\n%s\nwant a lock-free put", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "back.txt")
	alice.mustRun(t, "get", "tree/d07/lone.txt", out)
	if got, _ := os.ReadFile(out); string(got) != "one more file\n" {
		t.Fatalf("read back %q", got)
	}
	alice.mustRun(t, "check")
}

// smallFilesTree writes n small files spread over dirs folders of a new tree named name,
// and returns its path.
func smallFilesTree(t *testing.T, name string, n, dirs int) string {
	src := filepath.Join(t.TempDir(), name)
	for i := range n {
		p := filepath.Join(src, fmt.Sprintf("d%02d", i%dirs), fmt.Sprintf("file-%05d.txt", i))
		if i < dirs {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		os.WriteFile(p, []byte(fmt.Sprintf("small file number %d\n", i)), 0o644)
	}
	return src
}
