package dupless

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// 'veil get x.txt newdir/' with no newdir made newdir, then failed "exists and is a
// directory" (found by a user walkthrough): a DEST ending in / names a folder, and the
// file goes into it, made if missing, as rsync does.
func TestGetFileIntoSlashDest(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "x.txt")
	write(t, src, []byte("x"))
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "newdir")
	if sum, err := c.GetInto(ctx, "x.txt", dest+"/"); err != nil || sum.Err() != nil {
		t.Fatalf("get x.txt newdir/: %v %v", err, sum.Err())
	}
	if b, err := os.ReadFile(filepath.Join(dest, "x.txt")); err != nil || string(b) != "x" {
		t.Fatalf("newdir/x.txt: %q %v", b, err)
	}
	// Without the slash a missing DEST is the file's new name, as before.
	if sum, err := c.GetInto(ctx, "x.txt", dest+"2"); err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	if b, err := os.ReadFile(dest + "2"); err != nil || string(b) != "x" {
		t.Fatalf("newdir2: %q %v", b, err)
	}
}
