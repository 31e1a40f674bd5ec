package dupless

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// noRouteBE is the remote backend against a storage service without the batch route (an
// older veil): its capabilities are static (it claims every batch condition), and every
// batch is answered 404, as remote.PutBatch reports it (storage.ErrNotFound).
type noRouteBE struct{ storage.Backend }

func (b *noRouteBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	return fmt.Errorf("put batch of %d: %w", len(objs), storage.ErrNotFound)
}
func (b *noRouteBE) BatchCreates() {}
func (b *noRouteBE) BatchAbsents() {}
func (b *noRouteBE) BatchMatches() {}
func (b *noRouteBE) BatchLarge()   {}

// A service without batch uploads is one the batch queue supports (its objects go with
// Put); a record write's match condition must not make every record fail there.
func TestReviewRecordsOnServiceWithoutBatchRoute(t *testing.T) {
	be := &noRouteBE{Backend: newBackend(t)}
	dev := devices(t, be)
	src := smallTree(t, 12)
	put := func(locals ...string) {
		t.Helper()
		sum, err := dev().Put(ctx, locals, "")
		if err == nil {
			err = sum.Err()
		}
		if err != nil {
			t.Fatalf("put to a service without batches: %v", err)
		}
	}
	put(src)
	// A second put of changed files replaces records the root lists (match conditions).
	for i := 0; i < 12; i += 3 {
		write(t, filepath.Join(src, fmt.Sprintf("d%d", i%5), fmt.Sprintf("f%03d", i)), randBytes(1000, uint64(100+i)))
	}
	put(src)
	out := filepath.Join(t.TempDir(), "restored")
	if _, err := dev().Get(ctx, "small", out); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, out)
	// A lone small file, new then replaced, each by a command of its own.
	lone := filepath.Join(t.TempDir(), "lone")
	for i := range 2 {
		write(t, lone, randBytes(3000+i, uint64(900+i)))
		put(lone)
	}
	out = filepath.Join(t.TempDir(), "lone-out")
	if _, err := dev().Get(ctx, "lone", out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, randBytes(3001, 901)) {
		t.Fatal("the lone file is not its last content")
	}
}

// rootBatchBE counts the batches that carry a tree root's create.
type rootBatchBE struct {
	matchBE
	rootBatches atomic.Int64
}

func (b *rootBatchBE) PutBatch(ctx context.Context, objs []storage.Object) error {
	for _, o := range objs {
		if o.Dir == rootsDir {
			b.rootBatches.Add(1)
			break
		}
	}
	return b.matchBE.PutBatch(ctx, objs)
}

// A lone put whose record's create is refused because a dead command left a record at
// its path (no root lists it): the refusal (409 exists) is the record's, not the root's.
// putWithRoot took it for a lost root race, read the newest root and sent the same batch
// again foldTries times, then once more without the root, before the record's conflict
// was resolved.
func TestReviewRecordCreateConflictNotRootRace(t *testing.T) {
	be := &rootBatchBE{matchBE: matchBE{absentBE{&condBE{Backend: newBackend(t)}}}}
	dev := seededDevices(t, be)
	f := filepath.Join(t.TempDir(), "f")
	write(t, f, []byte("from the dead command"))
	dead := dev()
	dead.be = &noRootBE{Backend: be}
	dead.Put(ctx, []string{f}, "") // its record stays, listed by no root
	write(t, f, []byte("from the live one, longer"))
	a := dev()
	be.rootBatches.Store(0)
	if _, err := a.Put(ctx, []string{f}, ""); err != nil {
		t.Fatal(err)
	}
	// lock-free batch (refused), the folded batch under the lock (refused: the record's
	// create), and the one after keeping the other's record.
	if n := be.rootBatches.Load(); n > 3 {
		t.Fatalf("%d batches with the root for one refused record create; want at most 3", n)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := dev().Get(ctx, "f", out); err != nil {
		t.Fatal(err)
	}
}

// blipBE refuses the connections of the first `fails` chunk uploads, as a storage service
// restarting (or a network blip) does for a moment, then takes them.
type blipBE struct {
	storage.Backend
	fails atomic.Int64
}

func (b *blipBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if strings.HasPrefix(dir, chunkRoot) && b.fails.Add(-1) >= 0 {
		return fmt.Errorf("put %s: %w", name, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// A moment without the service (a restart: the connection refused for the three tries of
// one upload) used to fail no file: the file waiting for the chunk sends it once more
// (putRun.await). A dial error now stops the whole run at the first upload whose tries
// all met it, although the next try would have reached the service.
func TestReviewShortOutageFailsNoFile(t *testing.T) {
	fastRetries(t)
	be := &blipBE{Backend: newBackend(t)}
	be.fails.Store(int64(len(uploadBackoff) + 1)) // every try of the first upload
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, randBytes(5000, 7))
	sum, err := c.Put(ctx, []string{src}, "")
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatalf("put across a short outage: %v", err)
	}
}
