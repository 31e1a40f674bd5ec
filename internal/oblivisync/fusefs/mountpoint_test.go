package fusefs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Issue 17 item 4: after a SIGKILL the dead FUSE mount stayed on the mountpoint and the
// next mount failed ("fusermount exited with code 256") or stacked on it; a second mount
// on a live mountpoint hid the first. Now the dead mount is removed and the mount comes
// up with everything acknowledged, and a busy mountpoint is refused, leaving the first
// mount serving.
func TestDeadMountCleanedAndBusyRefused(t *testing.T) {
	be := newBackend(t, 32, 16<<10, 3)
	mnt, state := mkdir(t, "rw"), mkdir(t, "state")
	w := startMount(t, be, mnt, state, false)
	writeFile(t, filepath.Join(mnt, "kept.txt"), "acknowledged before the crash")
	w.Kill()
	if _, err := os.Stat(mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("after SIGKILL the mountpoint is not a dead mount (stat: %v); the test needs one", err)
	}
	w = startMount(t, be, mnt, state, false)
	if !strings.Contains(w.Output(), "removed the dead mount") {
		t.Fatalf("no word of the dead mount removed: %s", w.Output())
	}
	readIs(t, filepath.Join(mnt, "kept.txt"), "acknowledged before the crash")

	for _, ro := range []bool{true, false} {
		env := []string{}
		if ro {
			env = append(env, "OSYNC_RO=1")
		}
		out := mountRefused(t, be, mnt, mkdir(t, "other-state"), env...)
		if !strings.Contains(out, "already a mount point") {
			t.Fatalf("second mount (read-only=%v) on a live mountpoint: %s", ro, out)
		}
	}
	readIs(t, filepath.Join(mnt, "kept.txt"), "acknowledged before the crash")
	writeFile(t, filepath.Join(mnt, "after.txt"), "still served")
	stop(t, w)
}

// The mount table parser: mount point (octal escapes undone), file system type and
// source; lines without the " - " separator are skipped.
func TestReadMountinfo(t *testing.T) {
	const table = "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n" +
		"80 36 0:50 / /tmp/my\\040mount rw,nosuid,nodev,relatime shared:40 - fuse.osync veil-osync rw,user_id=0\n" +
		"garbage line\n"
	got, err := readMountinfo(strings.NewReader(table))
	want := []mountEntry{{"/mnt/parent", "ext3", "/dev/root"}, {"/tmp/my mount", "fuse.osync", "veil-osync"}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v %v, want %+v", got, err, want)
	}
}

func FuzzReadMountinfo(f *testing.F) {
	f.Add([]byte("80 36 0:50 / /tmp/my\\040mount rw shared:40 - fuse.osync veil-osync rw\n"))
	f.Add([]byte("1 2 3 4 5 - \\"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, _ := readMountinfo(bytes.NewReader(b))
		for _, e := range ents {
			if e.fstype == "" || e.source == "" {
				t.Fatalf("entry without type or source: %+v", e)
			}
		}
	})
}
