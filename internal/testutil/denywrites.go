package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// DenyWrites makes the folder dir refuse new entries until the test ends: mode 0555, or,
// for root (whom modes do not stop), the immutable attribute (chattr +i: EPERM). Where
// neither holds (chattr missing, a file system without attributes) the test is skipped.
func DenyWrites(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot deny writes to %s as root: chattr +i: %v %s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}
