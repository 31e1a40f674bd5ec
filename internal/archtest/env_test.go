package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// envReaders are the os functions that read the process environment (os.UserHomeDir and
// os.UserConfigDir read it too).
var envReaders = map[string]bool{"Getenv": true, "LookupEnv": true, "Environ": true,
	"ExpandEnv": true, "UserHomeDir": true, "UserConfigDir": true, "UserCacheDir": true}

// TestNoEnvironmentInLibraries: library packages take every setting as a parameter;
// cmd/veil resolves environment variables and home directories (issue 10, item 9).
// Test code and internal/testutil (test harness switches) are exempt.
func TestNoEnvironmentInLibraries(t *testing.T) {
	root := filepath.Join("..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || path == filepath.Join(root, "testutil")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && envReaders[sel.Sel.Name] {
				t.Errorf("%s: os.%s in a library package; resolve it in cmd/veil and pass it in", path, sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
