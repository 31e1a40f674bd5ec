package storeserver

import (
	"bytes"
	"context"
	"errors"
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
