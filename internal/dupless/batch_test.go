package dupless

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// batchBE is a backend with batch uploads: each batch is stored object by object on the
// local backend below (the storage service's atomic batch is tested in storeserver and
// the conformance suite); it counts what goes where and can fail batches.
type batchBE struct {
	storage.Backend
	batches, batched, userPuts atomic.Int64
	fail                       error // every PutBatch fails with it
}

func (b *batchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := storage.CheckBatch(objs, false); err != nil {
		return err
	}
	if b.fail != nil {
		return b.fail
	}
	b.batches.Add(1)
	b.batched.Add(int64(len(objs)))
	return storage.PutAll(ctx, b.Backend, objs)
}

func (b *batchBE) Put(ctx context.Context, d, n string, r io.Reader, s int64) error {
	if userPath(d) || d == chunkRoot || len(d) > len(chunkRoot) && d[:len(chunkRoot)] == chunkRoot {
		b.userPuts.Add(1)
	}
	return b.Backend.Put(ctx, d, n, r, s)
}

func smallTree(t *testing.T, n int) string {
	src := filepath.Join(t.TempDir(), "small")
	for i := 0; i < n; i++ {
		write(t, filepath.Join(src, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d", i)), randBytes(2000+i, uint64(i)))
	}
	return src
}

// Small chunks and key records go in batch uploads when the backend takes them; nothing
// small is sent alone, and the tree reads back.
func TestSmallObjectsGoInBatches(t *testing.T) {
	be := &batchBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	src := smallTree(t, 60)
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	if be.userPuts.Load() != 0 || be.batched.Load() < 120 {
		t.Fatalf("%d objects in %d batches, %d alone; want the 60 chunks and 60 records batched, none alone",
			be.batched.Load(), be.batches.Load(), be.userPuts.Load())
	}
	t.Logf("%d objects in %d batches", be.batched.Load(), be.batches.Load())
	out := filepath.Join(t.TempDir(), "restored")
	if _, err := c.Get(ctx, "small", out); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, out)
}

// A batch the backend refuses is sent again one object at a time (each gets its own
// answer); a backend without the batch route (not found) is not asked again.
func TestFailedBatchFallsBackToPuts(t *testing.T) {
	for _, fail := range []error{storage.ErrQuota, storage.ErrNotFound} {
		t.Run(fail.Error(), func(t *testing.T) {
			be := &batchBE{Backend: newBackend(t), fail: fmt.Errorf("batch: %w", fail)}
			c := newClient(t, be, mle.LocalKeys{})
			src := smallTree(t, 20)
			if _, err := c.Put(ctx, []string{src}, ""); err != nil {
				t.Fatal(err)
			}
			if be.userPuts.Load() < 40 {
				t.Fatalf("%d objects sent alone, want every chunk and record (40)", be.userPuts.Load())
			}
			if c.batch.disabled() != (fail == storage.ErrNotFound) {
				t.Fatalf("batch queue disabled: %v after %v", c.batch.disabled(), fail)
			}
			out := filepath.Join(t.TempDir(), "restored")
			if _, err := c.Get(ctx, "small", out); err != nil {
				t.Fatal(err)
			}
			sameTree(t, src, out)
		})
	}
}

// countingBatchBE counts requests as countingBE does, a batch upload being one request.
type countingBatchBE struct {
	countingBE
	objects atomic.Int64
}

func (b *countingBatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	b.n.Add(1)
	b.objects.Add(int64(len(objs)))
	return storage.PutAll(ctx, b.Backend, objs)
}

// BenchmarkPutSmallTreeRequests: storage requests of one put of 500 new 2 KiB files in 5
// directories, with and without batch uploads (a batch is one request). The batched count
// depends on how objects queue up (timing), the other does not.
func BenchmarkPutSmallTreeRequests(b *testing.B) {
	for _, batched := range []bool{false, true} {
		b.Run(map[bool]string{false: "one-put-per-object", true: "batched"}[batched], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				var be storage.Backend
				cb := &countingBatchBE{countingBE: countingBE{Backend: newBackendB(b)}}
				be = &cb.countingBE
				if batched {
					be = cb
				}
				src := b.TempDir()
				for f := 0; f < 500; f++ {
					p := filepath.Join(src, "d"+itoa(f%5), "f"+itoa(f))
					os.MkdirAll(filepath.Dir(p), 0o755)
					writeB(b, p, randBytes(2048, uint64(f)))
				}
				c, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Put(context.Background(), []string{src}, ""); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(cb.n.Load())/500, "requests/file")
				if batched {
					b.ReportMetric(float64(cb.objects.Load())/float64(max(1, cb.n.Load())), "objects/request")
				}
			}
		})
	}
}

// gatedBatchBE holds every batch until its gate gives way, recording each batch's size.
type gatedBatchBE struct {
	storage.Backend
	gate  chan struct{}
	sizes chan int
}

func (b *gatedBatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	b.sizes <- len(objs)
	<-b.gate
	return storage.PutAll(ctx, b.Backend, objs)
}

// A lone object leaves at once; objects arriving while its batch is out wait for its
// answer and leave together in one batch; a full batch does not wait.
func TestBatchQueueCoalescesWhileOneIsOut(t *testing.T) {
	be := &gatedBatchBE{Backend: newBackend(t), gate: make(chan struct{}), sizes: make(chan int, 16)}
	c := newClient(t, be, mle.LocalKeys{})
	put := func(i int, errs chan<- error) {
		errs <- c.putObject(ctx, "q", fmt.Sprintf("o%04d", i), []byte{byte(i)})
	}
	errs := make(chan error, 2*storage.BatchMaxObjects)
	go put(0, errs)
	if n := <-be.sizes; n != 1 {
		t.Fatalf("first batch of %d objects, want the lone one", n)
	}
	const trickle = 10
	for i := 1; i <= trickle; i++ {
		go put(i, errs)
	}
	waitQueued(t, c.batch, trickle)
	select {
	case n := <-be.sizes:
		t.Fatalf("a batch of %d left while one was out and no batch was full", n)
	default:
	}
	be.gate <- struct{}{} // the first batch's answer sends the ten together
	if n := <-be.sizes; n != trickle {
		t.Fatalf("second batch of %d objects, want the %d that waited", n, trickle)
	}
	// While that one is out, a full batch's worth leaves at once.
	for i := range storage.BatchMaxObjects {
		go put(1000+i, errs)
	}
	if n := <-be.sizes; n != storage.BatchMaxObjects {
		t.Fatalf("full batch of %d objects, want %d", n, storage.BatchMaxObjects)
	}
	close(be.gate)
	for range 1 + trickle + storage.BatchMaxObjects {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// waitQueued waits until n objects wait in q (up to 30 s: it was 1,000 polls 1 ms
// apart, a guess at how soon the goroutines run on a loaded machine).
func waitQueued(t *testing.T, q *batchQueue, n int) {
	t.Helper()
	testutil.WaitFor(t, 30*time.Second, fmt.Sprintf("%d objects queued", n), func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.queue) == n
	})
}
