package storeserver

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// lateDelete holds the first blob Delete made once armed until the test lets it go: an S3
// DELETE that reaches the bucket after the claim of its remover ran out (a slow or
// retried request; S3 offers no way to call one back, nor a delete conditional on what
// the object was when the request was sent).
// With giveUp, the held Delete answers at once with the error of a client whose deadline
// passed, and is carried out once the test lets it go (landed is closed then): the
// request outlived its caller's wait.
type lateDelete struct {
	storage.Backend
	giveUp  bool
	armed   atomic.Bool
	held    chan struct{} // closed once the held Delete arrived
	release chan struct{} // closed by the test: the held Delete goes on
	landed  chan struct{} // giveUp: closed once the held Delete was carried out
}

func newLateDelete(be storage.Backend, giveUp bool) *lateDelete {
	return &lateDelete{Backend: be, giveUp: giveUp, held: make(chan struct{}), release: make(chan struct{}), landed: make(chan struct{})}
}

func (b *lateDelete) Delete(ctx context.Context, dir, name string) error {
	if !b.armed.CompareAndSwap(true, false) {
		return b.Backend.Delete(ctx, dir, name)
	}
	close(b.held)
	if b.giveUp {
		go func() {
			<-b.release
			b.Backend.Delete(context.Background(), dir, name)
			close(b.landed)
		}()
		return context.DeadlineExceeded
	}
	<-b.release
	return b.Backend.Delete(ctx, dir, name)
}

// lateNodes are two nodes on one PostgreSQL and one versitygw bucket whose claims last
// 2 s (request timeout 1 s); node a's blob store is wrapped by late.
func lateNodes(t *testing.T) (a, b *Service, late *lateDelete) {
	bucket := testutil.StartS3(t).NewBucket(t, "blobs", "")
	late = newLateDelete(bucket, false)
	a = newPGService(t, Config{Blobs: late, RequestTimeout: time.Second})
	b = secondNode(t, a, Config{Blobs: bucket, RequestTimeout: time.Second})
	addUser(t, a, "alice")
	return a, b, late
}

// waitHeld waits for the held Delete, then until its remover's claim has run out.
func (b *lateDelete) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-b.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the removal never came")
	}
	time.Sleep(2500 * time.Millisecond) // the claim (request timeout + 1 s) runs out
}

// A removal of content (a refused upload's, or gc's) that reaches S3 after its claim ran
// out must not delete the copy of a later upload of the same content. Before, the copy
// had the same name: node b's gc took over the expired claim and finished the removal,
// an upload recorded the content anew and stored it, was acknowledged, and then node a's
// late DELETE removed it; every read of the file then failed. Now each row's copy is
// named by its generation too (schema version 3), so the late DELETE names a copy that
// is already gone.
func TestPGLateRemovalKeepsNewUpload(t *testing.T) {
	data := randBytes(41, 200<<10)
	t.Run("refused upload", func(t *testing.T) {
		a, b, late := lateNodes(t)
		nsA, nsB := mustNS(t, a, "alice"), mustNS(t, b, "alice")
		putBytes(t, nsA, "", "f", []byte("x"))
		late.armed.Store(true)
		refused := make(chan error, 1)
		go func() {
			refused <- nsA.PutBatch(context.Background(), []storage.Object{
				{Name: "big", Data: data}, {Name: "f", Data: []byte("y"), Create: true}})
		}()
		late.waitHeld(t)
		lateThenNew(t, b, nsB, data, late, refused, storage.ErrExists)
	})
	t.Run("gc", func(t *testing.T) {
		a, b, late := lateNodes(t)
		nsA, nsB := mustNS(t, a, "alice"), mustNS(t, b, "alice")
		putBytes(t, nsA, "", "f", data)
		if err := nsA.Delete(t.Context(), "", "f"); err != nil {
			t.Fatal(err)
		}
		late.armed.Store(true)
		gcA := make(chan error, 1)
		go func() { _, err := a.GC(context.Background()); gcA <- err }()
		late.waitHeld(t)
		lateThenNew(t, b, nsB, data, late, gcA, nil)
	})
}

// lateThenNew has node b's gc take over the expired claim, stores data anew as "g"
// through b, lets the held removal land, and checks that "g" still reads back.
func lateThenNew(t *testing.T, b *Service, nsB *Namespace, data []byte, late *lateDelete, first chan error, want error) {
	t.Helper()
	if _, err := b.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	putBytes(t, nsB, "", "g", data) // acknowledged
	close(late.release)
	if err := <-first; !errors.Is(err, want) {
		t.Fatalf("the removing request: %v, want %v", err, want)
	}
	got, err := getBytes(t, nsB, "", "g")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("acknowledged put lost to a late removal: %v", err)
	}
	if _, err := b.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, err := getBytes(t, nsB, "", "g"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after gc: %v", err)
	}
	fsckClean(t, b)
}

// The same on bbolt, where a removal holds off uploads of its content until the blob
// store answers, and no longer: a DELETE that outlives its caller's wait (the client gave
// up; S3 carries it out later) deleted the copy of the next upload of that content, which
// found the old copy still there (a duplicate costs one stat) and stored nothing. Now a
// record of version 2 names its copy by a key chosen when the content is first held, so
// the content stored after the record was removed has a name of its own.
func TestLateRemovalKeepsNewUploadBbolt(t *testing.T) {
	data := randBytes(42, 200<<10)
	srv := testutil.StartS3(t)
	open := func(t *testing.T) (*Service, *Namespace, *lateDelete) {
		late := newLateDelete(srv.NewBucket(t, "blobs", ""), true)
		s := newTestService(t, Config{Blobs: late})
		ns, _ := addUser(t, s, "alice")
		return s, ns, late
	}
	landed := func(t *testing.T, s *Service, ns *Namespace, late *lateDelete) {
		// The removal's timeout opened the breaker: the put is acknowledged once a probe
		// closed it (every 2 s).
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			err := ns.Put(t.Context(), "", "g", bytes.NewReader(data), int64(len(data)))
			if err == nil {
				break
			}
			if !errors.Is(err, storewire.ErrUnavailable) || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
		close(late.release)
		<-late.landed
		got, err := getBytes(t, ns, "", "g")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("acknowledged put lost to a late removal: %v", err)
		}
		if _, err := s.GC(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got, err := getBytes(t, ns, "", "g"); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after gc: %v", err)
		}
		fsckClean(t, s)
	}
	t.Run("refused upload", func(t *testing.T) {
		s, ns, late := open(t)
		putBytes(t, ns, "", "f", []byte("x"))
		late.armed.Store(true)
		err := ns.PutBatch(t.Context(), []storage.Object{{Name: "big", Data: data}, {Name: "f", Data: []byte("y"), Create: true}})
		if !errors.Is(err, storage.ErrExists) {
			t.Fatalf("refused batch: %v", err)
		}
		landed(t, s, ns, late)
	})
	t.Run("gc", func(t *testing.T) {
		s, ns, late := open(t)
		putBytes(t, ns, "", "f", data)
		if err := ns.Delete(t.Context(), "", "f"); err != nil {
			t.Fatal(err)
		}
		late.armed.Store(true)
		if _, err := s.GC(t.Context()); err == nil {
			t.Fatal("gc whose removal gave up succeeded")
		}
		landed(t, s, ns, late)
	})
}
