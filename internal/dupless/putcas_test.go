package dupless

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
)

// condBE gives a local backend conditional batches (storage.CreateBatcher) by running its
// batches one at a time: the client's compare-and-swap logic is what is tested here; the
// storage service's own transaction (in process and over loopback TLS) is checked by the
// conformance suite (storagetest, testBatchCreate). Optionally the first two batches with
// a conditional object wait for each other, so two commands surely race for one root.
type condBE struct {
	storage.Backend
	mu                sync.Mutex
	barrier           chan struct{} // closed by the second conditional batch; nil: none
	conds, lost, held atomic.Int64
	large             bool // takes one object over storage.BatchMaxObjectSize per batch (largeGateBE)
}

func (b *condBE) BatchCreates() {}

// absentBE is condBE that also honours absent conditions (storage.AbsentBatcher), as the
// storage service does from batch version 3: a client on it puts a lone small file
// without the lock (putlockless.go).
type absentBE struct{ *condBE }

func (b absentBE) BatchAbsents() {}

// matchBE is absentBE that also honours match conditions (storage.MatchBatcher), as the
// storage service does from batch version 4: records are written as compare-and-swaps
// (recordcas.go).
type matchBE struct{ absentBE }

func (b matchBE) BatchMatches() {}

func (b *condBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := storage.CheckBatch(objs, b.large); err != nil {
		return err
	}
	plain := make([]storage.Object, 0, len(objs))
	cond := false
	for _, o := range objs {
		cond = cond || o.Create || o.Absent || o.Match != nil
		if !o.Absent {
			o.Create, o.Match = false, nil
			plain = append(plain, o)
		}
	}
	if cond && b.barrier != nil {
		switch b.held.Add(1) {
		case 1:
			<-b.barrier
		case 2:
			close(b.barrier)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cond {
		b.conds.Add(1)
	}
	for _, o := range objs {
		if o.Match != nil {
			rc, err := b.Backend.Get(ctx, o.Dir, o.Name)
			if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrIsDir) {
				return fmt.Errorf("%s: %w", storage.Join(o.Dir, o.Name), storage.ErrChanged)
			}
			if err != nil {
				return err
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return err
			}
			if sha256.Sum256(data) != *o.Match {
				b.lost.Add(1)
				return fmt.Errorf("%s: %w", storage.Join(o.Dir, o.Name), storage.ErrChanged)
			}
			continue
		}
		if !o.Create && !o.Absent {
			continue
		}
		if _, err := b.Backend.Stat(ctx, o.Dir, o.Name); err == nil {
			b.lost.Add(1)
			return fmt.Errorf("%s: %w", storage.Join(o.Dir, o.Name), storage.ErrExists)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return storage.PutAll(ctx, b.Backend, plain)
}

// Two devices (two clients of one master key) put a file each at the same time; both
// publish the next root with one conditional batch, one loses the race (ErrExists) and
// publishes on top of the winner's root: both files end up in the newest root (no lost
// update), and a third device reads both.
func TestConcurrentPutsConditionalRoot(t *testing.T) {
	be := &condBE{Backend: newBackend(t)}
	dev := devices(t, be)
	first := dev() // the namespace's first root, before the race
	seed := filepath.Join(t.TempDir(), "seed")
	write(t, seed, []byte("seed"))
	if _, err := first.Put(ctx, []string{seed}, ""); err != nil {
		t.Fatal(err)
	}
	be.conds.Store(0)
	be.barrier = make(chan struct{})
	a, b := dev(), dev()
	fa, fb := filepath.Join(t.TempDir(), "from-a"), filepath.Join(t.TempDir(), "from-b")
	write(t, fa, randBytes(4096, 1))
	write(t, fb, randBytes(4096, 2))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, p := range []struct {
		c   *Client
		src string
	}{{a, fa}, {b, fb}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.c.Put(ctx, []string{p.src}, "")
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("puts: %v, %v", errs[0], errs[1])
	}
	if be.lost.Load() != 1 || be.conds.Load() != 3 {
		t.Fatalf("%d conditional batches, %d lost; want 3 and 1 (the race happened and was retried)", be.conds.Load(), be.lost.Load())
	}
	c := dev()
	for _, f := range []string{seed, fa, fb} {
		sameFile(t, c, f, filepath.Base(f))
	}
	latest, err := c.latestRoot(ctx)
	if err != nil || latest == nil {
		t.Fatalf("newest root: %v", err)
	}
	if latest.Seq != 3 || len(latest.Entries) != 3 {
		t.Fatalf("newest root #%d lists %d records, want #3 with the seed and both files", latest.Seq, len(latest.Entries))
	}
}
