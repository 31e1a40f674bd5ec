package keyserver

import (
	"os/exec"
	"strings"
	"testing"
)

// The key server's packages keep their layering (each doc.go says what it must not
// import); this is the depguard rule, checked with 'go list'.
func TestLayering(t *testing.T) {
	const mod = "github.com/veil-project/veil/"
	forbidden := map[string][]string{
		"internal/oprf":      {"internal/"},
		"internal/kswire":    {"internal/keyserver", "internal/ksclient", "internal/storage", "internal/mle", "cmd/"},
		"internal/keyserver": {"internal/ksclient", "internal/bench/ks", "internal/dupless", "internal/storage", "internal/store", "cmd/"},
		"internal/ksclient":  {"internal/keyserver", "internal/bench/ks", "internal/dupless", "internal/storage", "internal/store", "cmd/"},
		"internal/bench/ks":  {"internal/keyserver", "internal/ksclient", "internal/storage", "cmd/"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, mod)
			if !ok || rel == pkg {
				continue
			}
			for _, b := range bad {
				if strings.HasPrefix(rel, b) {
					t.Errorf("%s imports %s", pkg, rel)
				}
			}
		}
	}
}
