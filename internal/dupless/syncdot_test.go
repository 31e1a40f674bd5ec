package dupless

import (
	"io"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/mle"
)

// 'veil sync .' (or '..', or 'docs/..') stores the folder under its own name, as
// 'veil sync ~/docs' does. Found by review: the name was ".", so the folder's content was
// compared with, and stored into, DEST itself: every other folder stored there (photos/)
// was listed removed, and sync removed it.
func TestSyncDotIsTheFolder(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	photos := filepath.Join(t.TempDir(), "photos")
	write(t, filepath.Join(photos, "p1"), []byte("p"))
	mustPut(t, c, photos, "")
	docs := filepath.Join(t.TempDir(), "docs")
	write(t, filepath.Join(docs, "a"), []byte("a"))
	write(t, filepath.Join(docs, "sub", "b"), []byte("b"))
	for _, arg := range []string{".", "sub/.."} {
		t.Chdir(docs)
		res, err := c.Sync(ctx, arg, "", false)
		if err != nil || res.Removed != 0 {
			t.Fatalf("sync %s in docs: %+v %v; want nothing removed", arg, res, err)
		}
		for _, p := range []string{"photos/p1", "docs/a", "docs/sub/b"} {
			if err := c.Cat(ctx, p, io.Discard); err != nil {
				t.Errorf("after sync %s in docs, %s: %v", arg, p, err)
			}
		}
	}
	if es, err := c.List(ctx, "", false); err != nil || len(es) != 2 {
		t.Errorf("after the syncs the root holds %+v %v; want docs and photos", es, err)
	}
}
