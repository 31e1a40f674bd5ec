package dupless

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// sync and diff --local of a symlink to a folder (~/Documents moved to another disk and
// linked back) mean the folder, whose name is the link's. Found by review: the diff's walk
// stopped at the link, so every stored entry was "removed" (dry run) and sync stored the
// link in the folder's place: nothing of the folder was kept, and sync said it succeeded.
func TestSyncThroughSymlinkedFolder(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	home := t.TempDir()
	src := filepath.Join(home, "docs")
	write(t, filepath.Join(src, "a"), []byte("a"))
	write(t, filepath.Join(src, "sub", "b"), []byte("b"))
	if _, err := c.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(src, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, src); err != nil {
		t.Fatal(err)
	}
	if chs, err := c.DiffLocal(ctx, src, "docs"); err != nil || len(chs) != 0 {
		t.Fatalf("diff --local of the linked folder = %v %v; want no change", changeList(chs), err)
	}
	write(t, filepath.Join(moved, "new"), []byte("new"))
	if res, err := c.Sync(ctx, src, "", false); err != nil || res.Removed != 0 || res.Put.Files-res.Put.Unchanged != 1 {
		t.Fatalf("sync of the linked folder: %+v %v; want one file stored, nothing removed", res, err)
	}
	out := filepath.Join(t.TempDir(), "docs")
	if sum, err := c.Get(ctx, "docs", out); err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	for p, want := range map[string]string{"a": "a", "sub/b": "b", "new": "new"} {
		if got, err := os.ReadFile(filepath.Join(out, p)); err != nil || string(got) != want {
			t.Errorf("get docs/%s after the sync: %q %v, want %q", p, got, err, want)
		}
	}
}
