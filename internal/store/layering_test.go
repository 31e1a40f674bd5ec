package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering enforces the import rules of docs (architecture.md, style point 3) for this
// part: storage and its backends never see veil's client crypto, and the store never
// imports clients, crypto or the CLI. (The repository has no depguard config; this is the
// same check with go list.)
func TestLayering(t *testing.T) {
	forbidden := []string{"/internal/mle", "/internal/dupless", "/internal/ksclient", "/internal/oprf", "/cmd/"}
	for _, pkg := range []string{"../storage/...", "./"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkg).Output()
		if err != nil {
			t.Skipf("go list: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, "github.com/veil-project/veil") && strings.Contains(dep, f) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
	out, _ := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "../storage/...").Output()
	if strings.Contains(string(out), "go.etcd.io/bbolt") || strings.Contains(string(out), "veil/internal/store\n") {
		t.Error("storage backends depend on the store's server or its database")
	}
}
