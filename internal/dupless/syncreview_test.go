package dupless

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// A folder sync's diff saw gone, made again locally before its removals ran (a build's
// output folder, deleted and made anew), is not removed, but what was in it and is still
// gone is: found by review, sync dropped the folder's whole removal, reported success,
// and the files gone from it stayed stored.
func TestSyncFolderMadeAgainRemovesWhatIsStillGone(t *testing.T) {
	var armed atomic.Bool
	src := filepath.Join(t.TempDir(), "d")
	c, err := New(newBackend(t), NewMasterKey(), Options{Keys: mle.LocalKeys{}, Events: Events{Total: func(int, int64) {
		if armed.Swap(false) { // after the diff, as the put has walked the folder
			write(t, filepath.Join(src, "a", "y"), []byte("new"))
		}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write(t, filepath.Join(src, "a", "x"), []byte("old"))
	write(t, filepath.Join(src, "b"), []byte("b"))
	mustPut(t, c, src, "")
	os.RemoveAll(filepath.Join(src, "a"))
	armed.Store(true)
	if _, err := c.Sync(ctx, src, "", false); err != nil {
		t.Fatal(err)
	}
	if es, err := c.List(ctx, "d/a/x", false); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("d/a/x, gone locally, after the sync: %v %v", es, err)
	}
	if _, err := c.Sync(ctx, src, "", false); err != nil { // the next sync stores what is new
		t.Fatal(err)
	}
	if es, err := c.List(ctx, "d/a/y", false); err != nil || len(es) != 1 {
		t.Fatalf("d/a/y: %v %v", es, err)
	}
}
