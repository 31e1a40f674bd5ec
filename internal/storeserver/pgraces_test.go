package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
)

// slowBackend delays each blob Put while slow is set.
type slowBackend struct {
	storage.Backend
	slow  atomic.Bool
	delay time.Duration
}

func (b *slowBackend) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if b.slow.Load() {
		time.Sleep(b.delay)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// putOutlivingLease starts a put of 100 KiB (seeded by seed) on a PostgreSQL service whose
// pins last 2 s, while its blob store (be, slow until told otherwise) takes 3 s to store
// it, and runs gc once the pin's lease has run out: the put's reference then finds no blob
// row. done gets its answer.
func putOutlivingLease(t *testing.T, seed uint64) (*Service, *slowBackend, *Namespace, []byte, chan error) {
	t.Helper()
	lb, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	be := &slowBackend{Backend: lb, delay: 3 * time.Second}
	s := newPGService(t, Config{Blobs: be, RequestTimeout: time.Second}) // pin lease: 2 s
	ns, _ := addUser(t, s, "alice")
	data := randBytes(seed, 100<<10)
	be.slow.Store(true)
	done := make(chan error, 1)
	go func() { done <- ns.Put(context.Background(), "", "f", bytes.NewReader(data), int64(len(data))) }()
	time.Sleep(2500 * time.Millisecond) // the pin's lease has run out; the upload is still in its Put
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, be, ns, data, done
}

// A put whose blob row gc collected before the reference committed (its pin's lease ran
// out) must fail whole: found by review, its transaction committed although it was
// answered with an error (flush's "no record" check was made here, on a pipelined batch
// that already carried COMMIT); the name then pointed at content with no blob row, the
// client's retry answered success, and the next gc removed the content.
func TestPGFailedRefCheckCommitsNothing(t *testing.T) {
	s, be, ns, data, done := putOutlivingLease(t, 7)
	err := <-done
	be.slow.Store(false)
	t.Logf("first put: %v", err)
	if err == nil {
		t.Skip("the first put succeeded: race not reproduced")
	}
	if _, serr := ns.Stat(t.Context(), "", "f"); serr == nil {
		t.Errorf("a put answered with an error (%v) is nevertheless visible", err)
	}
	// The client retries: acknowledged.
	if err := ns.Put(context.Background(), "", "f", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := getBytes(t, ns, "", "f")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put lost after gc: %v", err)
	}
}

// The same, with no retry: the put that fails the check shares its group commit with
// another put of the user (it arrived while the group waited for the user's row lock, as
// when another node's group holds it). Found by review: the group committed, each member
// was rerun alone, the failed put's rerun was net-zero on the reference count and
// succeeded, so the put was acknowledged, and gc then removed its content.
func TestPGGroupRerunLosesNoPut(t *testing.T) {
	s, _, ns, data, done := putOutlivingLease(t, 8)
	pool := s.meta.(*pgMeta).pool
	// Another node's group holds alice's row while the upload's commit arrives.
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM veil_users WHERE name = 'alice' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1 * time.Second) // the slow put reaches the committer and waits on the lock
	small := make(chan error, 1)
	go func() { small <- ns.Put(context.Background(), "", "g", bytes.NewReader([]byte("small")), 5) }()
	time.Sleep(300 * time.Millisecond)
	tx.Rollback(t.Context())
	if err := <-small; err != nil {
		t.Fatalf("small put: %v", err)
	}
	if err := <-done; err != nil {
		if _, serr := ns.Stat(t.Context(), "", "f"); !errors.Is(serr, storage.ErrNotFound) {
			t.Fatalf("a put answered %v is stored anyway (stat: %v)", err, serr)
		}
		return // refused, and nothing of it committed: the right answer
	}
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := getBytes(t, ns, "", "f")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put lost after gc: %v", err)
	}
}

// slowDelete delays each blob Delete while slow is set.
type slowDelete struct {
	storage.Backend
	slow  atomic.Bool
	delay time.Duration
}

func (b *slowDelete) Delete(ctx context.Context, dir, name string) error {
	if b.slow.Load() {
		time.Sleep(b.delay)
	}
	return b.Backend.Delete(ctx, dir, name)
}

// Two nodes' gcs: node A marks an unreferenced blob deleting and is slow removing it (S3
// latency). Found by review: node B's gc took the same row ("deleting OR ..."), removed
// the content and deleted the row; an upload of the same content recorded it anew and was
// acknowledged; A's delayed remove deleted the new content. A gc's mark is now a claim
// other gcs respect until it runs out.
func TestPGTwoGCsKeepReuploadedBlob(t *testing.T) {
	dir := t.TempDir()
	la, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := local.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ba := &slowDelete{Backend: la, delay: 2 * time.Second}
	a := newPGService(t, Config{Blobs: ba})
	b := secondNode(t, a, Config{Blobs: lb})
	addUser(t, a, "alice")
	nsA, nsB := mustNS(t, a, "alice"), mustNS(t, b, "alice")
	data := randBytes(11, 200<<10)
	putBytes(t, nsA, "", "f", data)
	if err := nsA.Delete(t.Context(), "", "f"); err != nil {
		t.Fatal(err)
	}
	ba.slow.Store(true)
	gcA := make(chan error, 1)
	go func() { _, err := a.GC(context.Background()); gcA <- err }()
	time.Sleep(500 * time.Millisecond) // A has marked the blob deleting and is removing it
	if _, err := b.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	putBytes(t, nsB, "", "g", data) // acknowledged
	if err := <-gcA; err != nil {
		t.Fatal(err)
	}
	got, err := getBytes(t, nsB, "", "g")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put lost to a concurrent gc: %v", err)
	}
}

// gateBackend stops each blob Put at a gate the test opens: before writing (before) or
// after writing and before answering (after), whichever is set when the Put starts.
// Reaching the gate is signalled on reached; what the test sends through the gate is the
// Put's answer (an error before writing fails the Put without writing anything).
type gateBackend struct {
	storage.Backend
	before, after chan error
	reached       chan struct{}
}

func newGate(b storage.Backend) *gateBackend {
	return &gateBackend{Backend: b, reached: make(chan struct{}, 1)}
}

func (b *gateBackend) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if before := b.before; before != nil {
		b.reached <- struct{}{}
		if err := <-before; err != nil {
			return err
		}
	}
	if err := b.Backend.Put(ctx, dir, name, r, size); err != nil {
		return err
	}
	if after := b.after; after != nil {
		b.reached <- struct{}{}
		return <-after
	}
	return nil
}

// errAbandoned fails a gated Put as its request's end would (not an outage: the blob
// store's circuit breaker stays closed).
var errAbandoned = fmt.Errorf("upload abandoned: %w", context.Canceled)

// gatedNodes are two PostgreSQL nodes sharing one blob directory, each through its own
// gate, with pins that last 2 s.
func gatedNodes(t *testing.T) (a, b *Service, ga, gb *gateBackend) {
	t.Helper()
	la, lb := sharedBlobDir(t)
	ga, gb = newGate(la), newGate(lb)
	a = newPGService(t, Config{Blobs: ga, RequestTimeout: time.Second}) // pin lease: 2 s
	b = secondNode(t, a, Config{Blobs: gb, RequestTimeout: time.Second})
	return a, b, ga, gb
}

// staleThenAnew is the start of both stale-pin races on two nodes: node A's upload of
// 100 KiB pins its blob and stops at the gate aGate points at (before or after its blob
// store write) past its 2 s lease; gc then collects the blob's row; node B's upload of the
// same content records it anew and stops before its blob store write. It returns the
// namespaces, the content and the two uploads' answers.
func staleThenAnew(t *testing.T, a, b *Service, ga, gb *gateBackend, aGate *chan error, seed uint64) (nsA, nsB *Namespace, data []byte, errA, errB chan error) {
	t.Helper()
	addUser(t, a, "alice")
	nsA, nsB = mustNS(t, a, "alice"), mustNS(t, b, "alice")
	data = randBytes(seed, 100<<10)
	*aGate = make(chan error)
	errA = make(chan error, 1)
	go func() { errA <- nsA.Put(context.Background(), "", "a", bytes.NewReader(data), int64(len(data))) }()
	<-ga.reached
	time.Sleep(2500 * time.Millisecond)
	if rep, err := a.GC(t.Context()); err != nil || rep.Blobs != 1 {
		t.Fatalf("gc after the lease ran out: %+v %v (want the stale blob row collected)", rep, err)
	}
	gb.before = make(chan error)
	errB = make(chan error, 1)
	go func() { errB <- nsB.Put(context.Background(), "", "b", bytes.NewReader(data), int64(len(data))) }()
	<-gb.reached
	return nsA, nsB, data, errA, errB
}

// An upload whose pin's lease ran out (a slow blob store) and whose blob row gc then
// collected must not, when it is finally abandoned, release the pin of a later upload of the
// same content, which recorded the blob anew. Found by review: the release was
// "pins - 1 WHERE hash = $1", which dropped the new upload's pin; gc then collected the
// blob under that upload, whose put failed ("no record of blob") although nothing was
// wrong with it. A release now only drops a pin of the record it pinned (its generation).
func TestPGStaleReleaseKeepsNewPin(t *testing.T) {
	a, b, ga, gb := gatedNodes(t)
	// A's upload hangs in the blob store; B's records the blob anew, its write pending.
	nsA, _, data, errA, errB := staleThenAnew(t, a, b, ga, gb, &ga.before, 12)
	// A's upload is abandoned (its client gone): A fails and releases its pin.
	ga.before <- errAbandoned
	if err := <-errA; err == nil {
		t.Fatal("A's put succeeded although its blob store write was abandoned")
	}
	// B's pin is live (well within its lease): gc must leave its record alone.
	if rep, err := b.GC(t.Context()); err != nil || rep.Blobs != 0 {
		t.Errorf("gc collected a blob pinned by an upload in flight: %+v %v", rep, err)
	}
	gb.before <- nil
	if err := <-errB; err != nil {
		t.Fatalf("B's put failed: %v", err)
	}
	if _, err := a.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := getBytes(t, nsA, "", "b")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put lost after gc: %v", err)
	}
	fsckClean(t, a)
}

// An upload whose pin's lease ran out wrote its blob, gc then removed that blob and its
// row, and a second upload of the same content recorded it anew and is still writing it.
// The first upload's reference must not be taken by the new record: the blob it wrote is
// gone, and the new one may never arrive (here the second upload is abandoned).
// Found by review: the reference check matched the hash only, so the first put was
// acknowledged and its name pointed at content that no longer existed. A reference now
// must match the generation of the record its upload pinned.
func TestPGStaleHoldTakesNoNewRecord(t *testing.T) {
	a, b, ga, gb := gatedNodes(t)
	// A's upload writes its blob and hangs before its answer; B's records the blob anew.
	nsA, _, data, errA, errB := staleThenAnew(t, a, b, ga, gb, &ga.after, 13)
	ga.after <- nil // A's blob store answers at last
	putA := <-errA
	gb.before <- errAbandoned
	if err := <-errB; err == nil {
		t.Fatal("B's put succeeded although its blob store write was abandoned")
	}
	t.Logf("A's put: %v", putA)
	if putA != nil {
		if _, err := nsA.Stat(t.Context(), "", "a"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a put answered %v is stored anyway (stat: %v)", putA, err)
		}
		return // refused: the client sends it again
	}
	got, err := getBytes(t, nsA, "", "a")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put's content missing: %v", err)
	}
}
