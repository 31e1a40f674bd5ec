package fusemount

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// readsRoots runs do and fails the test unless it read want tree roots from be.
func readsRoots(t *testing.T, be *countingBE, what string, want int64, do func()) {
	t.Helper()
	be.rootGets.Store(0)
	do()
	if n := be.rootGets.Load(); n != want {
		t.Errorf("%s read %d tree roots, want %d", what, n, want)
	}
}

// readFile fails the test unless the mounted file p holds want.
func readFile(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Errorf("%s: %q %v, want %q", p, b, err, want)
	}
}

// The mount starts reading the newest tree root only; snapshots/ is listed from the roots
// when first browsed, a snapshot's listing is loaded when its folder is, and one dropped
// (past Config.Loaded) is loaded again, its folder listable and its files readable. Found
// by review: every snapshot's listing was loaded at start and held (40 snapshots of
// 3,000 files: 26 MiB; BenchmarkMountSnapshots).
func TestMountLoadsSnapshotsWhenBrowsed(t *testing.T) {
	requireFUSE(t)
	be, master, _ := manySnapshots(t, 3, 4)
	var m *mounted
	readsRoots(t, be, "starting the mount", 1, func() {
		m = runMount(t, clientOf(t, be, master), func(c *Config) { c.Loaded = 1 })
	})
	readsRoots(t, be, "reading current/", 0, func() {
		readFile(t, filepath.Join(m.dir, "current", "src", "file-00000"), "version 2")
	})
	var names []string
	readsRoots(t, be, "listing snapshots/", 2, func() {
		es, err := os.ReadDir(filepath.Join(m.dir, "snapshots"))
		if err != nil || len(es) != 3 {
			t.Fatalf("snapshots/: %v %v", es, err)
		}
		for _, e := range es {
			names = append(names, e.Name())
		}
	})
	snap := func(i int, p ...string) string {
		return filepath.Join(append([]string{m.dir, "snapshots", names[i], "src"}, p...)...)
	}
	readsRoots(t, be, "browsing the oldest snapshot", 1, func() { readFile(t, snap(0, "file-00000"), "version 0") })
	readsRoots(t, be, "browsing the second (dropping the oldest's listing)", 1, func() {
		readFile(t, snap(1, "file-00000"), "version 1")
	})
	readsRoots(t, be, "listing the oldest again", 1, func() {
		es, err := os.ReadDir(snap(0))
		if err != nil || len(es) != 4 {
			t.Fatalf("%s after its listing was dropped: %v %v", snap(0), es, err)
		}
	})
	for i := 1; i < 4; i++ {
		readFile(t, snap(0, fmt.Sprintf("file-%05d", i)), fmt.Sprint(i))
	}
	readsRoots(t, be, "reading the newest snapshot", 0, func() { readFile(t, snap(2, "file-00000"), "version 2") })
}
