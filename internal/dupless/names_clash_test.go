package dupless

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store written before the rule may hold a file and a folder of one name (put X --to
// FILE made one). rm -r NAME/ then removes the folder, never the file, and a bare NAME is
// refused as ambiguous.
func TestRemoveTellsFileFromFolder(t *testing.T) {
	ctx := context.Background()
	c := newClient(t, newBackend(t), nil)
	src := t.TempDir()
	write(t, filepath.Join(src, "x"), []byte("the file"))
	write(t, filepath.Join(src, "y"), []byte("in the folder"))
	if _, err := c.Put(ctx, []string{filepath.Join(src, "x")}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, []string{filepath.Join(src, "y")}, "x"); err == nil {
		t.Fatal("put --to a stored file made a folder of the file's name")
	}
	if err := c.Mkdir(ctx, "x/sub"); err == nil {
		t.Fatal("mkdir below a stored file")
	}
	// Make the clash the old code allowed, bypassing the checks.
	unlock, err := c.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.mkdir(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Remove(ctx, "x", true); err == nil || !strings.Contains(err.Error(), "x/") {
		t.Fatalf("rm -r x with a file and a folder x: %v", err)
	}
	if _, err := c.Remove(ctx, "x/", true); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x")
	if _, err := c.Get(ctx, "x", out); err != nil {
		t.Fatalf("the file went with the folder: %v", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "the file" {
		t.Fatalf("x = %q", b)
	}
	if _, err := c.Remove(ctx, "x/", true); err == nil {
		t.Fatal("rm x/ removed a file")
	}
	if err := c.NeedFolder(ctx, "x"); !errors.Is(err, ErrNotFolder) {
		t.Fatalf("NeedFolder(file) = %v", err)
	}
	if err := c.NeedFolder(ctx, "typo"); !errors.Is(err, ErrNotFolder) {
		t.Fatalf("NeedFolder(missing) = %v", err)
	}
}
