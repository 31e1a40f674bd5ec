package dupless

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// A path whose kind changed locally (a file now a folder, a folder now a file or a
// symlink) is replaced by sync, its old kind kept in the snapshots. Found by review: put
// refuses a folder where a file is stored and a file where a folder is, so such a sync
// failed ("nothing removed") every time it ran, and stored the new folder's files below
// the stored file of the same name.
func TestSyncReplacesChangedKinds(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "d")
	write(t, filepath.Join(src, "x"), []byte("x was a file"))
	write(t, filepath.Join(src, "y", "z"), []byte("y was a folder"))
	write(t, filepath.Join(src, "l", "z"), []byte("l was a folder"))
	write(t, filepath.Join(src, "keep"), []byte("keep"))
	mustPut(t, c, src, "")
	os.Remove(filepath.Join(src, "x"))
	write(t, filepath.Join(src, "x", "in"), []byte("x is a folder"))
	os.RemoveAll(filepath.Join(src, "y"))
	write(t, filepath.Join(src, "y"), []byte("y is a file"))
	os.RemoveAll(filepath.Join(src, "l"))
	os.Symlink("keep", filepath.Join(src, "l"))
	res, err := c.Sync(ctx, src, "", false)
	if err != nil {
		t.Fatalf("sync after kinds changed: %v", err)
	}
	if chs, err := c.DiffLocal(ctx, src, "d"); err != nil || len(chs) != 0 {
		t.Fatalf("after sync (%d removed), diff --local = %v %v", res.Removed, changeList(chs), err)
	}
	out := filepath.Join(t.TempDir(), "d")
	if sum, err := c.Get(ctx, "d", out); err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	for p, want := range map[string]string{"x/in": "x is a folder", "y": "y is a file", "keep": "keep"} {
		if got, err := os.ReadFile(filepath.Join(out, p)); err != nil || string(got) != want {
			t.Errorf("get d/%s: %q %v, want %q", p, got, err, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(out, "l")); err != nil || target != "keep" {
		t.Errorf("get d/l: %q %v, want a symlink to keep", target, err)
	}
	if vs, err := c.Log(ctx, "d/y/z"); err != nil || len(vs) != 2 || !vs[1].Deleted {
		t.Errorf("log d/y/z (its folder replaced by sync): %+v %v; want it kept, then deleted", vs, err)
	}
	if vs, err := c.Log(ctx, "d/x"); err != nil || len(vs) != 2 || vs[0].IsDir || !vs[1].IsDir {
		t.Errorf("log d/x (a file replaced by a folder): %+v %v; want the file kept, then the folder", vs, err)
	}
}
