package dupless

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLonePutLooksUpNamesNotDirectory: a lone put (no lock) looks up its file's two names
// in the destination directory (is it a directory? a previous version?) instead of listing
// the directory, whose listing grows with every file in it; it still refuses a name stored
// as a directory and still replaces a previous version.
func TestLonePutLooksUpNamesNotDirectory(t *testing.T) {
	local := newBackend(t)
	kb := &kindsCondBE{kindsBatchBE{kindsBE{Backend: local}}, &condBE{Backend: local}}
	be := kindsAbsentBE{kb}
	c := devices(t, be)()
	ctx := context.Background()
	src := t.TempDir()
	put := func(name string, data []byte) error {
		p := filepath.Join(src, name)
		write(t, p, data)
		s, err := c.Put(ctx, []string{p}, "d")
		if err == nil {
			err = s.Err()
		}
		return err
	}
	for i := 0; i < 5; i++ {
		if err := put("f"+itoa(i), randBytes(4096, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	before := kb.snapshot()
	if err := put("new", randBytes(4096, 99)); err != nil {
		t.Fatal(err)
	}
	after := kb.snapshot()
	if n := after["list"] - before["list"]; n != 0 {
		t.Errorf("a lone put listed %d directories, want 0 (its names looked up)", n)
	}
	if n := after["batch"] - before["batch"]; n != 1 || after["delete"] != before["delete"] {
		t.Errorf("a lone put made %d batches and %d deletes, want 1 and 0 (no lock)", n, after["delete"]-before["delete"])
	}
	// A previous version is found and replaced.
	changed := randBytes(4096, 100)
	if err := put("f1", changed); err != nil {
		t.Fatal(err)
	}
	got := filepath.Join(t.TempDir(), "got")
	if s, err := c.Get(ctx, "d/f1", got); err != nil || s.Err() != nil {
		t.Fatalf("get: %v %v", err, s.Err())
	}
	if b, _ := os.ReadFile(got); !bytes.Equal(b, changed) {
		t.Error("the changed file's get gives other bytes")
	}
	// A name stored as a directory is refused.
	tree := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(tree, "x"), []byte("x"))
	if s, err := c.Put(ctx, []string{tree}, "d"); err != nil || s.Err() != nil {
		t.Fatalf("put tree: %v %v", err, s.Err())
	}
	if err := put("sub", []byte("a file")); err == nil || !strings.Contains(err.Error(), "stored as a directory") {
		t.Errorf("a lone put onto a directory's name: %v, want refused as a directory", err)
	}
}
