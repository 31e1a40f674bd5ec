package profile

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
)

// Init creates the profile directory (and missing parents) that holds the only copy of
// the user's master key. Each new directory's entry lives in its parent, so the parent
// must be fsync'ed too: otherwise a crash soon after init (after data went to the store
// under the new key) may lose the directory, key file and all. Checked by tracing the
// fsync calls of an Init in a child process (strace -y names each fd's path).
func TestInitSyncsNewProfileDirsParents(t *testing.T) {
	if d := os.Getenv("VEIL_REVIEW_INIT_DIR"); d != "" {
		dupless.TestOnlyUseLowCostKDF()
		if _, err := Init(context.Background(), d, []byte("pw"), InitOptions{Storage: os.Getenv("VEIL_REVIEW_INIT_STORE"), NoKS: true}); err != nil {
			t.Fatal(err)
		}
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace")
	}
	base := t.TempDir()
	dir := filepath.Join(base, "new", "profile")
	log := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-qq", "-y", "-e", "trace=fsync", "-o", log,
		os.Args[0], "-test.run=^TestInitSyncsNewProfileDirsParents$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VEIL_REVIEW_INIT_DIR="+dir, "VEIL_REVIEW_INIT_STORE="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace of init failed (ptrace not allowed?): %v\n%s", err, out)
	}
	trace, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); err != nil {
		t.Fatalf("child init wrote no key: %v", err)
	}
	if !containsFsyncOf(string(trace), dir) {
		t.Fatalf("the trace shows no fsync of the profile directory itself; tracing does not work here:\n%s", trace)
	}
	for _, parent := range []string{base, filepath.Join(base, "new")} {
		if !containsFsyncOf(string(trace), parent) {
			t.Errorf("init created %s's child directory but never fsync'ed %s", parent, parent)
		}
	}
}

// containsFsyncOf reports whether an strace -y log has fsync on an fd naming path.
func containsFsyncOf(trace, path string) bool {
	for _, l := range strings.Split(trace, "\n") {
		if i := strings.Index(l, "fsync("); i >= 0 && strings.Contains(l[i:], "<"+path+">)") {
			return true
		}
	}
	return false
}
