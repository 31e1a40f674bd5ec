package fusemount

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/testutil"
)

// current/ follows roots another client publishes while mounted (Config.Refresh): a
// changed file reads its new content, a removed one is gone, an added file and folder
// appear, also where the kernel had cached them (read, stat'ed, looked up absent), and
// snapshots/ lists the new snapshots; a file open before the change keeps reading the
// version it opened. Found by review: current/ stayed the tree of the mount's start.
func TestMountCurrentFollowsNewRoots(t *testing.T) {
	requireFUSE(t)
	be, master, src := manySnapshots(t, 1, 3) // file-00000 "version 0", file-00001 "1", file-00002 "2"
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "kept"), []byte("kept"), 0o644)
	putTree(t, clientOf(t, be, master), src)
	m := runMount(t, clientOf(t, be, master), func(c *Config) { c.Refresh = time.Second })
	cur := func(p ...string) string { return filepath.Join(append([]string{m.dir, "current", "src"}, p...)...) }

	readFile(t, cur("file-00000"), "version 0")
	readFile(t, cur("sub", "kept"), "kept")
	if _, err := os.Stat(cur("file-00001")); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{cur("added"), cur("newdir")} {
		if _, err := os.Stat(absent); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s before it is stored: %v", absent, err)
		}
	}
	keptIno, subIno := ino(t, cur("file-00002")), ino(t, cur("sub"))
	open, err := os.Open(cur("file-00000"))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()

	os.WriteFile(filepath.Join(src, "file-00000"), []byte("version 1"), 0o644)
	os.WriteFile(filepath.Join(src, "added"), []byte("added"), 0o644)
	os.MkdirAll(filepath.Join(src, "newdir"), 0o755)
	os.WriteFile(filepath.Join(src, "newdir", "f"), []byte("in newdir"), 0o644)
	other := clientOf(t, be, master)
	putTree(t, other, src)
	if _, err := other.Remove(t.Context(), "src/file-00001", false); err != nil {
		t.Fatal(err)
	}

	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	testutil.WaitFor(t, 30*time.Second, "current/ showing the new root", func() bool {
		_, err := os.Stat(cur("file-00001"))
		return read(cur("file-00000")) == "version 1" && read(cur("added")) == "added" &&
			read(cur("newdir", "f")) == "in newdir" && errors.Is(err, fs.ErrNotExist)
	})
	es, err := os.ReadDir(cur())
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if want := []string{"added", "file-00000", "file-00002", "newdir", "sub"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("current/src: %v %v, want %v", names, err, want)
	}
	readFile(t, cur("sub", "kept"), "kept")
	b := make([]byte, 64)
	if n, err := open.ReadAt(b, 0); string(b[:n]) != "version 0" {
		t.Errorf("a file open before the change reads %q (%v), want the version it opened", b[:n], err)
	}
	if es, err := os.ReadDir(filepath.Join(m.dir, "snapshots")); err != nil || len(es) != 4 {
		t.Errorf("snapshots/ after two commands while mounted: %d entries, %v; want 4", len(es), err)
	}
	time.Sleep(1100 * time.Millisecond) // the kernel's entries expire: it looks them up again
	if ino(t, cur("file-00002")) != keptIno || ino(t, cur("sub")) != subIno {
		t.Errorf("an unchanged file or folder looked up again became another node (its cached pages lost)")
	}
}

// With Config.Refresh negative, current/ stays the tree of the mount's start, and
// snapshots/ the snapshots retained then: a put while mounted shows in neither (mount again
// to see it), as the mount's "mounted N snapshots" said.
func TestMountShowsRootsAsAtStart(t *testing.T) {
	requireFUSE(t)
	be, master, src := manySnapshots(t, 2, 1)
	m := runMount(t, clientOf(t, be, master), func(c *Config) { c.Refresh = -1 })
	if m.snapshots != 2 {
		t.Errorf("the mount said %d snapshots, want 2", m.snapshots)
	}
	readFile(t, filepath.Join(m.dir, "current", "src", "file-00000"), "version 1")
	os.WriteFile(filepath.Join(src, "file-00000"), []byte("version 2"), 0o644)
	putTree(t, clientOf(t, be, master), src)
	time.Sleep(1100 * time.Millisecond) // any check would be due after Refresh's minimum
	readFile(t, filepath.Join(m.dir, "current", "src", "file-00000"), "version 1")
	es, err := os.ReadDir(filepath.Join(m.dir, "snapshots"))
	if err != nil || len(es) != 2 {
		t.Fatalf("snapshots/ after a put while mounted: %v %v, want the 2 retained at start", es, err)
	}
	readFile(t, filepath.Join(m.dir, "snapshots", es[0].Name(), "src", "file-00000"), "version 0")
	readFile(t, filepath.Join(m.dir, "snapshots", es[1].Name(), "src", "file-00000"), "version 1")
	m2 := runMount(t, clientOf(t, be, master), func(*Config) {})
	readFile(t, filepath.Join(m2.dir, "current", "src", "file-00000"), "version 2")
	if es, err := os.ReadDir(filepath.Join(m2.dir, "snapshots")); err != nil || len(es) != 3 || m2.snapshots != 3 {
		t.Errorf("a new mount's snapshots/: %d entries (said %d), %v; want 3", len(es), m2.snapshots, err)
	}
}

// Once a check found a newer root, what the kernel cached under current/ that changed is
// invalidated at once (go-fuse's notify calls), not when the kernel's entries expire: here
// they are cached for an hour (Refresh 1h), and a check is made due by hand. A folder
// removed, then stored again, is a folder again (the kernel marks a deleted folder dead:
// its node must not be answered again).
func TestMountFollowInvalidatesCachedEntries(t *testing.T) {
	requireFUSE(t)
	be, master, src := manySnapshots(t, 1, 3)
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "kept"), []byte("kept"), 0o644)
	os.MkdirAll(filepath.Join(src, "gone"), 0o755)
	os.WriteFile(filepath.Join(src, "gone", "f"), []byte("in gone"), 0o644)
	putTree(t, clientOf(t, be, master), src)
	var f *follower
	m := runMount(t, clientOf(t, be, master), func(c *Config) {
		c.Refresh = time.Hour
		c.gotFollower = func(got *follower) { f = got }
	})
	cur := func(p ...string) string { return filepath.Join(append([]string{m.dir, "current", "src"}, p...)...) }
	readFile(t, cur("file-00000"), "version 0")
	readFile(t, cur("sub", "kept"), "kept")
	if _, err := os.Stat(cur("file-00001")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cur("added")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("added before it is stored: %v", err)
	}
	keptIno, subIno := ino(t, cur("file-00002")), ino(t, cur("sub"))
	readFile(t, cur("gone", "f"), "in gone")
	gone, err := os.Open(cur("gone")) // holds the folder's node in the kernel, as a shell in it
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()

	os.WriteFile(filepath.Join(src, "file-00000"), []byte("version 1"), 0o644)
	os.WriteFile(filepath.Join(src, "added"), []byte("added"), 0o644)
	other := clientOf(t, be, master)
	putTree(t, other, src)
	for _, p := range []string{"src/file-00001", "src/gone"} {
		if _, err := other.Remove(t.Context(), p, true); err != nil {
			t.Fatal(err)
		}
	}
	readFile(t, cur("file-00000"), "version 0") // no check due: the kernel's cache, or the mount's view

	check := func() {
		t.Helper()
		f.mu.Lock()
		f.last = time.Time{} // as if the hour had passed
		f.mu.Unlock()
		// A lookup checks (of an absent name: the kernel caches none under current/, so
		// it asks; a listing would also replace the entries it lists).
		if _, err := os.Stat(cur("absent")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		var sent chan struct{}
		testutil.WaitFor(t, 30*time.Second, "the check", func() bool { // it may outlast checkWait
			f.mu.Lock()
			defer f.mu.Unlock()
			sent = f.notified
			return !f.checking
		})
		select {
		case <-sent:
		case <-time.After(30 * time.Second):
			t.Fatal("invalidations not sent within 30 s")
		}
	}
	check()
	if _, err := os.Stat(cur("gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a removed folder after the check: %v", err)
	}
	readFile(t, cur("file-00000"), "version 1")
	readFile(t, cur("added"), "added")
	if _, err := os.Stat(cur("file-00001")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a removed file after the check: %v", err)
	}
	if ino(t, cur("file-00002")) != keptIno || ino(t, cur("sub")) != subIno {
		t.Errorf("an unchanged file or folder became another node (its cached pages lost)")
	}
	readFile(t, cur("sub", "kept"), "kept")

	putTree(t, other, src) // gone/ stored again
	check()
	if es, err := os.ReadDir(cur("gone")); err != nil || len(es) != 1 {
		t.Errorf("a folder stored again after its removal: %v %v", es, err)
	}
	readFile(t, cur("gone", "f"), "in gone")
}

// ino is the inode number of p.
func ino(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A mount of a namespace with nothing stored yet shows the first put in current/.
func TestMountFollowsFirstRoot(t *testing.T) {
	requireFUSE(t)
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	master := dupless.NewMasterKey()
	m := runMount(t, clientOf(t, l, master), func(c *Config) { c.Refresh = time.Second })
	if es, err := os.ReadDir(filepath.Join(m.dir, "current")); err != nil || len(es) != 0 || m.snapshots != 0 {
		t.Fatalf("current/ with nothing stored: %v %v (%d snapshots)", es, err, m.snapshots)
	}
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "f"), []byte("first"), 0o644)
	putTree(t, clientOf(t, l, master), src)
	testutil.WaitFor(t, 30*time.Second, "current/ showing the first put", func() bool {
		b, _ := os.ReadFile(filepath.Join(m.dir, "current", "src", "f"))
		return string(b) == "first"
	})
	if es, err := os.ReadDir(filepath.Join(m.dir, "snapshots")); err != nil || len(es) != 1 {
		t.Errorf("snapshots/ after the first put: %v %v", es, err)
	}
}

// Once the kernel's entries under current/ expire (Config.Refresh), it looks up again every
// name it uses; while nothing changed, those lookups read nothing from the storage service
// (the check for a newer root is a STAT): an unchanged entry is answered from the node
// the mount has. Found by review: each such lookup read the entry's record again, a GET
// per name used per --refresh, where the hour-long entries before asked nothing.
func TestMountRelookupWhileUnchangedReadsNothing(t *testing.T) {
	requireFUSE(t)
	be, master, src := manySnapshots(t, 1, 20)
	os.MkdirAll(filepath.Join(src, "sub"), 0o755)
	os.WriteFile(filepath.Join(src, "sub", "kept"), []byte("kept"), 0o644)
	putTree(t, clientOf(t, be, master), src)
	m := runMount(t, clientOf(t, be, master), func(c *Config) { c.Refresh = time.Second })
	var paths []string
	for i := range 20 {
		paths = append(paths, filepath.Join(m.dir, "current", "src", fmt.Sprintf("file-%05d", i)))
	}
	paths = append(paths, filepath.Join(m.dir, "current", "src", "sub", "kept"))
	inos := map[string]uint64{}
	for _, p := range paths {
		inos[p] = ino(t, p)
	}
	time.Sleep(1100 * time.Millisecond) // the kernel's entries expire, and a check is due
	before := be.gets.Load()
	for _, p := range paths {
		if ino(t, p) != inos[p] {
			t.Errorf("%s became another node", p)
		}
	}
	if n := be.gets.Load() - before; n != 0 {
		t.Errorf("looking up %d unchanged names again read %d objects, want none", len(paths), n)
	}
}

// A snapshot's folder looked up before the snapshot existed (a script waiting for it) is
// found once the mount has followed the new root: the kernel keeps no negative entry under
// snapshots/ for longer than --refresh. Found by review: it kept the absent name for an
// hour, although a listing showed the new snapshot.
func TestMountSnapshotLookedUpBeforeItExists(t *testing.T) {
	requireFUSE(t)
	l, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	master := dupless.NewMasterKey()
	src := filepath.Join(t.TempDir(), "src")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "f"), []byte("first"), 0o644)
	putTree(t, clientOf(t, l, master), src)
	m := runMount(t, clientOf(t, l, master), func(c *Config) { c.Refresh = time.Second })
	// Every name the next snapshot may get (its time to the second, after the first's),
	// looked up first.
	first, err := clientOf(t, l, master).Snapshots(context.Background())
	if err != nil || len(first) != 1 {
		t.Fatalf("snapshots: %v, %d", err, len(first))
	}
	start := first[0].Time.Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(start))
	for s := range 6 {
		name := start.Add(time.Duration(s) * time.Second).Local().Format("2006-01-02T15:04:05")
		if _, err := os.Stat(filepath.Join(m.dir, "snapshots", name)); !os.IsNotExist(err) {
			t.Fatalf("snapshot %s before the put: %v", name, err)
		}
	}
	os.WriteFile(filepath.Join(src, "f"), []byte("second"), 0o644)
	putTree(t, clientOf(t, l, master), src)
	snaps, err := clientOf(t, l, master).Snapshots(context.Background())
	if err != nil || len(snaps) != 2 {
		t.Fatalf("snapshots: %v, %d", err, len(snaps))
	}
	name := SnapshotName(snaps[1], map[string]bool{})
	if snaps[1].Time.After(start.Add(5 * time.Second)) {
		t.Skipf("the put took past the names looked up (%s)", name)
	}
	testutil.WaitFor(t, 30*time.Second, "snapshots/"+name+" found after the put", func() bool {
		b, _ := os.ReadFile(filepath.Join(m.dir, "snapshots", name, "src", "f"))
		return string(b) == "second"
	})
}
