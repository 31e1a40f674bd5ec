package dupless

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// createCutBE cancels its command (as Ctrl-C does) once armed, right after its n-th
// folder creation; as a remote service's requests are, its reads and writes are cut off
// by the cancellation (the local backend alone would not notice it).
type createCutBE struct {
	storage.Backend
	n       int64
	created atomic.Int64
	cancel  context.CancelFunc
}

func (b *createCutBE) Create(ctx context.Context, d string) error {
	err := b.Backend.Create(ctx, d)
	if b.cancel != nil && b.created.Add(1) == b.n {
		b.cancel()
	}
	return err
}

func (b *createCutBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return b.Backend.Get(ctx, d, n)
}

func (b *createCutBE) Put(ctx context.Context, d, n string, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.Backend.Put(ctx, d, n, r, size)
}

// A folder's mv interrupted (Ctrl-C) just after it created a folder of the destination
// leaves no folder without a record (found by a user walkthrough: check then named
// moved/d/ a "folder without a record: an older veil made them", and ls -l showed it as
// d?????????, until the mv ran again). The folder's record goes with it, as a file's
// record goes with its move.
func TestMoveInterruptedLeavesNoFolderWithoutRecord(t *testing.T) {
	fastRetries(t)
	for n := int64(1); n <= 3; n++ {
		be := &createCutBE{Backend: newBackend(t), n: n}
		c, master, _ := moveTreeFixture(t, be, Options{Jobs: 1})
		cctx, cancel := context.WithCancel(ctx)
		be.cancel = cancel
		err := c.Move(cctx, "tree", "moved")
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("mv cut after folder %d: %v, want it interrupted", n, err)
		}
		next, err := New(be, master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := next.Check(ctx, CheckOptions{})
		next.Close()
		if err != nil || len(res.Problems) != 0 || len(res.Unrecorded) != 0 {
			t.Fatalf("check after the mv cut after folder %d: %v, problems %v, folders without a record %v", n, err, res.Problems, res.Unrecorded)
		}
	}
}
