package dupless

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// Two puts into one new folder, each writing the folder's record: b writes it first, a
// then writes it again (over b's), and a's root, which went with its file, lists a's
// record. b's root then finds its number taken and is built again on a's: it must list
// the folder's record that is stored (a's), as publishChanges does (resolveConflicts), not
// b's own, overwritten. Found by review: the root that went with the record was rebuilt
// with b's changes applied blindly, so the newest root listed a folder record no longer
// stored and every read of the folder was "not as the newest authenticated tree root
// lists it".
func TestFoldedRootRebuiltResolvesConflicts(t *testing.T) {
	t.Run("unconditional records", func(t *testing.T) {
		be, _ := newGateBE(t)
		foldedRootRace(t, be, &be.onBatch)
	})
	t.Run("records as compare-and-swaps", func(t *testing.T) { // the storage service since batch version 4
		be := &batchHookBE{matchBE: matchBE{absentBE{&condBE{Backend: newBackend(t)}}}}
		foldedRootRace(t, be, &be.onBatch)
	})
}

// batchHookBE is matchBE with a hook before each batch.
type batchHookBE struct {
	matchBE
	onBatch func([]storage.Object)
}

func (b *batchHookBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if b.onBatch != nil {
		b.onBatch(objs)
	}
	return b.matchBE.PutBatch(ctx, objs)
}

func foldedRootRace(t *testing.T, be storage.Backend, onBatch *func([]storage.Object)) {
	dev := devices(t, be)
	a, b := dev(), dev()
	if _, err := a.Put(ctx, []string{bigTree(t, 3)}, ""); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a"), randBytes(500, 1))
	write(t, filepath.Join(dir, "b"), randBytes(500, 2))
	var armed atomic.Bool
	armed.Store(true)
	*onBatch = func(objs []storage.Object) {
		for _, o := range objs {
			if o.Dir == rootsDir && armed.Swap(false) { // b's file and root: a puts first
				if _, err := a.Put(ctx, []string{filepath.Join(dir, "a")}, "new"); err != nil {
					t.Error(err)
				}
				return
			}
		}
	}
	if _, err := b.Put(ctx, []string{filepath.Join(dir, "b")}, "new"); err != nil {
		t.Fatal(err)
	}
	if armed.Load() {
		t.Fatal("b's put sent no root with its file")
	}
	r := dev()
	root, err := r.latestRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range root.Entries {
		dir, name := storage.Split(p)
		if sha256.Sum256(testutil.GetObject(t, be, dir, name)) != h {
			t.Errorf("root %d lists %s, not as stored", root.Seq, r.describe(p))
		}
	}
	sameFile(t, r, filepath.Join(dir, "a"), "new/a")
	sameFile(t, r, filepath.Join(dir, "b"), "new/b")
}
