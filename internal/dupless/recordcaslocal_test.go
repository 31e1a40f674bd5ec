package dupless

import (
	"context"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// hookLocalBE is a local directory backend with afterRecord; its conditions are the
// backend's own.
type hookLocalBE struct {
	*local.Backend
	afterRecord
}

func (b *hookLocalBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := storage.PutAll(ctx, b.Backend, objs); err != nil {
		return err
	}
	b.stored(objs)
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
	racePutsOfOneFolder(t, be, &be.afterRecord)
}
