package local_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage/local"
)

// New creates the backend's root (veil init makes a local store this way); its entry lives
// in the parent directory, which must be fsync'ed, or a crash after Puts that reported
// success (each fsync'ed inside the root) can lose the root and every object. Checked by
// tracing the fsync calls of a child process (strace -y names each fd's path).
func TestNewSyncsNewRootsParent(t *testing.T) {
	if d := os.Getenv("VEIL_REVIEW_LOCAL_ROOT"); d != "" {
		b, err := local.New(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put(context.Background(), "", "f", strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace")
	}
	base := t.TempDir()
	root := filepath.Join(base, "store")
	log := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync", "-o", log,
		os.Args[0], "-test.run=^TestNewSyncsNewRootsParent$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VEIL_REVIEW_LOCAL_ROOT="+root)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace failed (ptrace not allowed?): %v\n%s", err, out)
	}
	trace, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	fsynced := func(path string) bool {
		for _, l := range strings.Split(string(trace), "\n") {
			if i := strings.Index(l, "fsync("); i >= 0 && strings.Contains(l[i:], "<"+path+">)") {
				return true
			}
		}
		return false
	}
	if !fsynced(root) {
		t.Fatalf("no fsync of the root after a Put in it; tracing does not work here:\n%s", trace)
	}
	if !fsynced(base) {
		t.Errorf("New created %s but never fsync'ed its parent %s", root, base)
	}
}
