package archtest

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/veil-project/veil/"

// rules: packages under the key may not depend (even transitively) on packages under any
// of the values. Imports point down the layers: cmd -> services/clients -> protocols and
// formats -> primitives.
var rules = map[string][]string{
	"internal/mle":           {"internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oprf", "internal/oblivisync", "cmd"},
	"internal/oprf":          {"internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "cmd"},
	"internal/storage":       {"internal/mle", "internal/oprf", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oblivisync", "cmd"},
	"internal/storeserver":   {"internal/mle", "internal/oprf", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oblivisync", "cmd"},
	"internal/keyserver":     {"internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/oblivisync", "cmd"},
	"internal/ksclient":      {"internal/storage", "internal/storeserver", "internal/dupless", "internal/keyserver", "internal/oblivisync", "cmd"},
	"internal/dupless":       {"internal/keyserver", "internal/storeserver", "internal/oblivisync", "cmd"},
	"internal/oblivisync":    {"internal/mle", "internal/oprf", "internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "cmd"},
	"internal/testutil":      {"cmd"},
	"internal/mle/mlebench":  {"cmd"},
	"internal/metal/circuit": {"internal/metal/twopc", "internal/storage", "internal/storeserver", "internal/profile", "internal/allinone", "internal/oblivisync", "internal/dupless", "cmd"},
	"internal/metal/ac":      {"internal/storage", "internal/storeserver", "internal/profile", "internal/allinone", "internal/oblivisync", "internal/dupless", "cmd"},
	"internal/metal/oram":    {"internal/metal/ac", "internal/storage", "internal/storeserver", "internal/profile", "internal/allinone", "internal/oblivisync", "internal/dupless", "cmd"},
	"internal/metal/twopc":   {"internal/storage", "internal/storeserver", "internal/profile", "internal/allinone", "internal/oblivisync", "internal/dupless", "cmd"},
	"internal/pki":           {"internal/mle", "internal/oprf", "internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oblivisync", "internal/allinone", "internal/server", "cmd"},
	"internal/sealedkey":     {"internal/mle", "internal/oprf", "internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oblivisync", "internal/allinone", "internal/server", "internal/pki", "cmd"},
	"internal/server":        {"internal/mle", "internal/oprf", "internal/storage", "internal/storeserver", "internal/dupless", "internal/ksclient", "internal/keyserver", "internal/oblivisync", "internal/allinone", "cmd"},
	// Peekaboo: formats at the bottom; the K-server and the V-server never import each other.
	"internal/peekaboo/wire":    {"internal/peekaboo/index", "internal/peekaboo/tlsconf", "internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local", "internal/storeserver", "internal/keyserver", "internal/dupless", "cmd"},
	"internal/peekaboo/tlsconf": {"internal/peekaboo/wire", "internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "cmd"},
	"internal/peekaboo/index":   {"internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local", "cmd"},
	"internal/peekaboo/kserver": {"internal/peekaboo/vserver", "internal/peekaboo/client", "internal/peekaboo/local", "internal/storeserver", "internal/keyserver", "cmd"},
	"internal/peekaboo/vserver": {"internal/peekaboo/kserver", "internal/peekaboo/index", "internal/peekaboo/client", "internal/peekaboo/local", "internal/storeserver", "internal/keyserver", "cmd"},
	"internal/peekaboo/client":  {"internal/peekaboo/kserver", "internal/peekaboo/vserver", "internal/peekaboo/index", "internal/peekaboo/local", "internal/storeserver", "internal/keyserver", "cmd"},
	"internal/peekaboo/local":   {"cmd"},
}

type pkg struct {
	ImportPath string
	Deps       []string
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, mod)
		for prefix, banned := range rules {
			if rel != prefix && !strings.HasPrefix(rel, prefix+"/") {
				continue
			}
			checked++
			for _, d := range p.Deps {
				drel, ok := strings.CutPrefix(d, mod)
				if !ok {
					continue
				}
				for _, b := range banned {
					if drel == b || strings.HasPrefix(drel, b+"/") {
						if strings.HasPrefix(drel, prefix) {
							continue // a package may use its own subpackages
						}
						t.Errorf("%s imports %s (layering: %s must not depend on %s)", rel, drel, prefix, b)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package matched a rule")
	}
}
