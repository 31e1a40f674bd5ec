package profile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/dupless"
)

// put keeps its cache in the profile, one file per storage location (mode 0600), and a
// deleted cache file is rebuilt by the next put.
func TestPutCacheFilePerLocation(t *testing.T) {
	dupless.TestOnlyUseLowCostKDF()
	ctx := context.Background()
	dir, store, other := filepath.Join(t.TempDir(), "p"), t.TempDir(), t.TempDir()
	if _, err := Init(ctx, dir, []byte("pw"), InitOptions{Storage: store, NoKS: true}); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "f"), []byte("content"), 0o644)
	put := func(o Overrides) {
		t.Helper()
		c, done, err := Open(ctx, dir, []byte("pw"), ClientOptions{Overrides: o})
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		if _, err := c.Put(ctx, []string{src}, ""); err != nil {
			t.Fatal(err)
		}
	}
	put(Overrides{})
	put(Overrides{Storage: other})
	a, b := PutCacheFile(dir, store), PutCacheFile(dir, other)
	if a == b {
		t.Fatal("two locations share a cache file")
	}
	for _, p := range []string{a, b} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, fi, err)
		}
	}
	os.Remove(a)
	put(Overrides{})
	if _, err := os.Stat(a); err != nil {
		t.Fatalf("the cache was not rebuilt: %v", err)
	}
}
