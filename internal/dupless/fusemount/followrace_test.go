package fusemount

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// A lookup of a folder under current/ that read the folder from the older root while a
// check made a newer one current, and stores its node after the check's invalidation
// stored the newer one, leaves the newer node: the folder shows its new mode. Found by
// review (left open since session 15): the older node replaced the newer one, and the
// folder showed its old mode until it changed again. The interleaving is forced: the
// lookup waits, once it has its view, until the check's invalidations are sent.
func TestMountLookupRacingCheckKeepsNewerFolderNode(t *testing.T) {
	requireFUSE(t)
	be, master, src := manySnapshots(t, 1, 1)
	sub := filepath.Join(src, "sub")
	os.MkdirAll(sub, 0o755)
	putTree(t, clientOf(t, be, master), src)
	var f *follower
	var armed atomic.Bool
	paused, release := make(chan struct{}), make(chan struct{})
	m := runMount(t, clientOf(t, be, master), func(c *Config) {
		c.Refresh = time.Second // the kernel's entries last 1 s: it looks sub up again
		c.gotFollower = func(got *follower) { f = got }
		c.viewed = func(dir, name string) {
			if dir == "src" && name == "sub" && armed.Swap(false) {
				close(paused)
				<-release
			}
		}
	})
	setLast := func(at time.Time) {
		f.mu.Lock()
		f.last = at
		f.mu.Unlock()
	}
	setLast(time.Now().Add(time.Hour)) // no check until the test makes one due
	mnt := filepath.Join(m.dir, "current", "src", "sub")
	if fi, err := os.Stat(mnt); err != nil || fi.Mode().Perm() != 0o555 {
		t.Fatalf("sub before the change: %v %v", fi, err)
	}
	if err := os.Chmod(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	putTree(t, clientOf(t, be, master), src) // the newer root: sub drwx------

	time.Sleep(1100 * time.Millisecond) // the kernel's entry for sub expires
	armed.Store(true)
	looked := make(chan error, 1)
	go func() {
		fi, err := os.Stat(mnt) // looks sub up in the older root, and waits (viewed)
		if err == nil && fi.Mode().Perm() != 0o500 {
			err = errors.New("mode " + fi.Mode().String())
		}
		looked <- err
	}()
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("sub not looked up again")
	}
	setLast(time.Time{}) // a check is due: a lookup in current/ itself (not under src) makes it
	if _, err := os.Stat(filepath.Join(m.dir, "current", "absent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var sent chan struct{}
	testutil.WaitFor(t, 30*time.Second, "the check", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		sent = f.notified
		return !f.checking
	})
	select {
	case <-sent: // sub's newer node stored, the kernel told
	case <-time.After(30 * time.Second):
		t.Fatal("invalidations not sent within 30 s")
	}
	close(release)
	if err := <-looked; err != nil {
		t.Errorf("sub looked up racing the check: %v, want dr-x------", err)
	}
	// What Getattr answers until sub is looked up again.
	if n := f.top.GetChild("src").GetChild("sub").Operations().(*treeDir).getNode(); n.Mode.Perm() != 0o700 {
		t.Errorf("sub's node after the race: %v, want drwx------", n.Mode)
	}
}
