package oblivisync

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayering enforces the import rules the doc.go files state: the engine imports no
// FUSE, no CLI and no other veil subsystem; fusefs and osbench import no CLI; nothing but
// tests imports osynctest.
func TestLayering(t *testing.T) {
	const mod = "github.com/veil-project/veil/"
	rules := map[string][]string{
		".":         {mod + "cmd", mod + "internal/oblivisync/", "github.com/hanwen/go-fuse", mod + "internal/storage", mod + "internal/mle", mod + "internal/dupless", mod + "internal/keyserver"},
		"fusefs":    {mod + "cmd", mod + "internal/bench/osync", mod + "internal/oblivisync/osynctest"},
		"osbench":   {mod + "cmd", mod + "internal/oblivisync/osynctest"},
		"osynctest": {mod + "cmd"},
	}
	for dir, banned := range rules {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				p := strings.Trim(imp.Path.Value, `"`)
				for _, b := range banned {
					if strings.HasPrefix(p, b) {
						t.Errorf("%s imports %s (not allowed in %s)", f, p, dir)
					}
				}
			}
		}
	}
}
