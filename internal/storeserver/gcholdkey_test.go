package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// heldPutDupDelete is a blob store whose next Put, once holdPut is set, waits at the gate
// until the test opens it, and whose next Delete, once dupDelete is set, is carried out at
// once and then a second time when the test lets it (landed is closed then): a DELETE the
// client retried (minio-go does) after its first attempt stalled in the network, the retry
// answering and the first attempt reaching the bucket later.
type heldPutDupDelete struct {
	storage.Backend
	holdPut, dupDelete atomic.Bool
	putHeld, gate      chan struct{}
	release, landed    chan struct{}
}

func (b *heldPutDupDelete) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if b.holdPut.CompareAndSwap(true, false) {
		close(b.putHeld)
		<-b.gate
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

func (b *heldPutDupDelete) Delete(ctx context.Context, dir, name string) error {
	if !b.dupDelete.CompareAndSwap(true, false) {
		return b.Backend.Delete(ctx, dir, name)
	}
	go func() {
		<-b.release
		b.Backend.Delete(context.Background(), dir, name)
		close(b.landed)
	}()
	return b.Backend.Delete(ctx, dir, name)
}

// An upload of content that was counted as held (blobPins.add) before gc began, and that
// waited for gc to finish, names its copy anew when gc removed the content meanwhile, so a
// late DELETE of gc's cannot delete it. Found by review: the key the uploads of the content
// shared (blobPins.keyOf) was kept while any of them was counted, also across the gc that
// removed the copy it named; the upload stored its copy under the removed copy's name, was
// acknowledged, and gc's DELETE that reached the bucket late deleted it. Here: upload A
// (refused) holds the content while gc waits for it, upload B of the same content is
// counted and waits behind gc, A's refusal leaves the removal to gc (B counts), gc removes
// the copy and its DELETE lands again after B was acknowledged. gc now forgets the keys.
func TestGCForgetsHeldKeysBbolt(t *testing.T) {
	be := &heldPutDupDelete{Backend: testutil.StartS3(t).NewBucket(t, "blobs", ""),
		putHeld: make(chan struct{}), gate: make(chan struct{}), release: make(chan struct{}), landed: make(chan struct{})}
	s := newTestService(t, Config{Blobs: be})
	m := s.meta.(*boltMeta)
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, "", "f", []byte("x"))
	data := randBytes(43, 200<<10)
	h := sha256.Sum256(data)

	be.holdPut.Store(true)
	errA := make(chan error, 1)
	go func() {
		errA <- ns.PutBatch(context.Background(), []storage.Object{{Name: "big", Data: data}, {Name: "f", Data: []byte("y"), Create: true}})
	}()
	<-be.putHeld // A holds the content (gcMu shared), its copy on its way
	gcDone := make(chan error, 1)
	go func() { _, err := s.GC(context.Background()); gcDone <- err }()
	waitFor(t, "gc waiting for the holds", func() bool {
		if m.gcMu.TryRLock() { // fails while a writer (gc) waits
			m.gcMu.RUnlock()
			return false
		}
		return true
	})
	errB := make(chan error, 1)
	go func() { errB <- ns.Put(context.Background(), "", "g", bytes.NewReader(data), int64(len(data))) }()
	waitFor(t, "upload B counted", func() bool {
		m.pins.mu.Lock()
		defer m.pins.mu.Unlock()
		return m.pins.n[h] == 2
	})
	be.dupDelete.Store(true)
	close(be.gate)
	if err := <-errA; !errors.Is(err, storage.ErrExists) {
		t.Fatalf("upload A: %v, want refused", err)
	}
	if err := <-gcDone; err != nil {
		t.Fatalf("gc: %v", err)
	}
	if err := <-errB; err != nil {
		t.Fatalf("upload B: %v", err)
	}
	close(be.release)
	<-be.landed
	if got, err := getBytes(t, ns, "", "g"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("B's acknowledged file after gc's late DELETE: %v", err)
	}
	fsckClean(t, s)
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never came: %s", what)
		}
	}
}
