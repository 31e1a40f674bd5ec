package dupless

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// hookLocalBE is a local directory backend that runs after once, after the first batch
// holding a record is stored; its conditions are the backend's own.
type hookLocalBE struct {
	*local.Backend
	after func()
	once  atomic.Bool
}

func (b *hookLocalBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := storage.PutAll(ctx, b.Backend, objs); err != nil {
		return err
	}
	for _, o := range objs {
		if strings.HasSuffix(o.Name, keySuffix) && !strings.HasPrefix(o.Dir, veilDir) && b.after != nil && b.once.CompareAndSwap(false, true) {
			b.after()
			break
		}
	}
	return nil
}

// TestPutsOfOneFolderEverySnapshotRestores on a local directory backend: two puts of one
// folder at once (two devices on a shared folder; puts share the lock). Before session 17
// the directory backend had no record conditions, and the snapshot of the put whose
// records the other replaced could not restore them ("this version is not kept"); its
// batches now carry them (under the backend's flock), as the storage service's do.
func TestPutsOfOneFolderEverySnapshotRestoresLocal(t *testing.T) {
	lb, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	be := &hookLocalBE{Backend: lb}
	dev := seededDevices(t, be)
	srcA := writeTree(t, t.TempDir(), 12, 3000, 100)
	srcB := writeTree(t, t.TempDir(), 12, 3000, 200)
	var bErr error
	be.after = func() { _, bErr = dev().Put(ctx, []string{srcB}, "") }
	a := dev()
	a.opts.Jobs = 1 // its records go one by one: B's put lands between two of them
	if _, err := a.Put(ctx, []string{srcA}, ""); err != nil {
		t.Fatal(err)
	}
	if !be.once.Load() || bErr != nil {
		t.Fatalf("the race was not run (b's put: %v)", bErr)
	}
	everySnapshotRestores(t, dev(), srcA, srcB)
}
