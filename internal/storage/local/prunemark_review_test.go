package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// A lock-free put on a directory (docs/design.md, "A put without the lock") relies on its
// batch's condition that .veil/pruning is absent being checked atomically with the batch's
// renames, against prune's plain Put of the mark from another process: once the mark's Put
// has returned, the batch is either wholly stored (it committed before the mark, so prune's
// next read of the root sees it) or refused and nothing of it is stored, never stored in
// part or after. Checked by the session 17 review with two openers of one directory, the
// mark put while the batch renames its objects: it fails when Put renames without the
// commit lock (the mark lands between the batch's check and its last rename).
func TestPruneMarkExcludesBatchAcrossOpeners(t *testing.T) {
	dir, put, prune := twoOpeners(t)
	ctx := context.Background()
	const chunks = 250
	for round := range 3 {
		var objs []storage.Object
		for i := range chunks {
			objs = append(objs, storage.Object{Dir: ".veil/chunks", Name: fmt.Sprintf("r%dc%d", round, i), Data: []byte{byte(i)}})
		}
		objs = append(objs, storage.Object{Dir: ".veil", Name: "pruning", Absent: true},
			storage.Object{Dir: ".veil/roots", Name: fmt.Sprintf("%016d", round), Data: []byte("root"), Create: true})
		var batchErr error
		seen := -1
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); batchErr = put.PutBatch(ctx, objs) }()
		go func() {
			defer wg.Done()
			first := filepath.Join(dir, ".veil", "chunks", objs[0].Name)
			for i := 0; i < 1e6; i++ { // the mark's Put lands while the batch commits
				if _, err := os.Stat(first); err == nil {
					break
				}
			}
			if err := prune.Put(ctx, ".veil", "pruning", bytes.NewReader(nil), 0); err != nil {
				t.Error(err)
				return
			}
			seen = 0
			for _, o := range objs {
				if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(storage.Join(o.Dir, o.Name)))); err == nil && !o.Absent {
					seen++
				}
			}
		}()
		wg.Wait()
		switch {
		case seen < 0:
			t.FailNow()
		case batchErr == nil && seen != chunks+1:
			t.Fatalf("round %d: the batch was stored, but prune's mark saw %d of its %d objects", round, seen, chunks+1)
		case batchErr != nil && !errors.Is(batchErr, storage.ErrExists):
			t.Fatalf("round %d: %v", round, batchErr)
		case batchErr != nil && seen != 0:
			t.Fatalf("round %d: the batch was refused (%v), but %d of its objects were stored", round, batchErr, seen)
		}
		if err := prune.Delete(ctx, ".veil", "pruning"); err != nil {
			t.Fatal(err)
		}
	}
}
