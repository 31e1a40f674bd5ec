package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/veil-project/veil/"

// match reports whether path (module-relative for veil packages) matches pattern: the
// package itself, or with a trailing "/..." the package and everything below it (so
// "internal/store/..." never matches internal/storage).
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// external reports a third-party pattern: its first element is a host name.
func external(pattern string) bool {
	host, _, _ := strings.Cut(pattern, "/")
	return strings.Contains(host, ".")
}

type pkg struct {
	ImportPath string
	Deps       []string
}

func packages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var ps []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, mod)
		ps = append(ps, p)
	}
	return ps
}

func TestLayering(t *testing.T) {
	for _, p := range packages(t) {
		for _, r := range rules {
			if !match(r.Pkg, p.ImportPath) {
				continue
			}
			for _, d := range p.Deps {
				rel, veil := strings.CutPrefix(d, mod)
				if veil {
					d = rel
				}
				for _, b := range r.Banned {
					if external(b) != !veil {
						continue // veil patterns for veil packages, third-party ones for the rest
					}
					if match(b, d) {
						t.Errorf("%s depends on %s (rule %s: not %s)", p.ImportPath, d, r.Pkg, b)
					}
				}
			}
		}
	}
}

// A new package gets a rule before it gets code: every package matches one.
func TestEveryPackageHasARule(t *testing.T) {
	for _, p := range packages(t) {
		found := false
		for _, r := range rules {
			found = found || match(r.Pkg, p.ImportPath)
		}
		if !found {
			t.Errorf("%s has no layering rule in internal/archtest/rules.go", p.ImportPath)
		}
	}
}

// The rules themselves: a rule's pattern must name something, and the trailing-slash
// matching must keep a prefix from swallowing a sibling.
func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"internal/store/...", "internal/store", true},
		{"internal/store/...", "internal/store/x", true},
		{"internal/store/...", "internal/storage", false},
		{"internal/store/...", "internal/storeserver", false},
		{"internal/oblivisync", "internal/oblivisync/fusefs", false},
		{"github.com/hanwen/go-fuse/...", "github.com/hanwen/go-fuse/v2/fuse", true},
	}
	for _, c := range cases {
		if got := match(c.pattern, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.pattern, c.path, got)
		}
	}
	ps := packages(t)
	for _, r := range rules {
		used := false
		for _, p := range ps {
			used = used || match(r.Pkg, p.ImportPath)
		}
		if !used && !strings.HasPrefix(r.Pkg, "internal/peekaboo") && !strings.HasPrefix(r.Pkg, "internal/metal") {
			t.Errorf("rule for %s matches no package", r.Pkg)
		}
	}
}
