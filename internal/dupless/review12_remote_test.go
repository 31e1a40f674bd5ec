package dupless

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
)

// reviewServe runs a real storage service over HTTPS and returns its URL and a user.
func reviewServe(t *testing.T) (string, storewire.Credential) {
	url, cred, _ := serveStoreWith(t, storeserver.LocalBlobs, nil)
	return url, cred
}

// serveStoreWith is reviewServe for a store whose content is at location (blobs, or its
// data directory's blobs/ for LocalBlobs); it returns the data directory too.
func serveStoreWith(t *testing.T, location string, blobs storage.Backend) (string, storewire.Credential, string) {
	return storetest.Start(t, storetest.Options{BlobLocation: location, Blobs: blobs})
}

// One node of two is down (nothing listens): every request fails over to the live one,
// so the put neither stops (stopsRun: a dial error) nor fails a file.
func TestReviewPutFailsOverPastDeadNode(t *testing.T) {
	url, cred := reviewServe(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close()
	be, err := remote.NewMulti([]string{dead, url}, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	c, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := smallTree(t, 80)
	write(t, filepath.Join(src, "big"), randBytes(3<<20, 5)) // chunks sent by Put, not batched
	sum, err := c.Put(ctx, []string{src}, "")
	if err == nil {
		err = sum.Err()
	}
	if err != nil {
		t.Fatalf("put with one node down: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := c.Get(ctx, "small", out); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, out)
}

// reviewServeOlder is reviewServe whose batch parser stops at version 3 (a service from
// before match conditions); it counts the batches it refused and all requests.
func reviewServeOlder(t *testing.T, refused, requests *atomic.Int64) (string, storewire.Credential) {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	older := storetest.OlderBatches(t, s.Handler(), refused)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		older.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cred.CA = ""
	return srv.URL, cred
}

// Against a service older than match conditions every command still stores; a lone put
// replacing a file sends its match once in vain (refused), then the same batch without it,
// still lock-free (nothing was stored, nothing learned about other commands). It went
// under the lock instead: 15 requests instead of 5, in every command (noMatch is not
// kept across commands).
func TestReviewOlderServiceNoMatch(t *testing.T) {
	var refused, requests atomic.Int64
	url, cred := reviewServeOlder(t, &refused, &requests)
	be, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	dev := devices(t, be)
	src := smallTree(t, 10)
	mustPut(t, dev(), src, "")
	write(t, filepath.Join(src, "d0", "f000"), randBytes(777, 77))
	mustPut(t, dev(), src, "")
	lone := filepath.Join(t.TempDir(), "lone")
	write(t, lone, []byte("one"))
	mustPut(t, dev(), lone, "")
	write(t, lone, []byte("two, longer"))
	refused.Store(0)
	requests.Store(0)
	mustPut(t, dev(), lone, "")
	t.Logf("lone replacing put: %d requests, %d refused batches", requests.Load(), refused.Load())
	// Before match conditions: 5 requests, lock-free. The refused match costs one more,
	// not the lock (its object, listing, release) and a second round of lookups.
	if n := requests.Load(); n > 6 {
		t.Fatalf("a lone put replacing a file on a service without match conditions: %d requests, want at most 6", n)
	}
	out := filepath.Join(t.TempDir(), "o")
	if _, err := dev().Get(ctx, "small", out); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, out)
}

// A record over 64 KiB (a file of some 600 chunks and more) goes as a batch of one large
// object to carry its condition; a service whose --max-batch-bytes is below the record's
// size refuses that batch (413), where a Put (every record before match conditions)
// stores it. The record write then failed, and so did the file, every time.
func TestReviewLargeRecordPastServiceBatchLimit(t *testing.T) {
	s, _, _ := storetest.Open(t, storetest.Options{Config: storeserver.Config{MaxBatchBytes: 1 << 20}})
	ns, err := s.Namespace("alice")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(ns, NewMasterKey(), Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	unlock, err := c.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record{Type: typeFile, Mode: 0o644, Chunks: make([]chunkRef, 12000)} // ~1.3 MB sealed
	rnd := randBytes(len(rec.Chunks)*96, 3)
	for i := range rec.Chunks {
		ch := &rec.Chunks[i]
		copy(ch.Key[:], rnd[i*96:])
		copy(ch.Digest[:], rnd[i*96+32:])
		copy(ch.Tag[:], rnd[i*96+64:])
		ch.PlainLen, ch.MsgLen = 1<<20, 1<<20
	}
	encDir, encName, err := c.encFile("huge")
	if err != nil {
		t.Fatal(err)
	}
	n, werr := c.writeRecord(ctx, encDir, encName+keySuffix, rec)
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatalf("record of %d chunks on a service with --max-batch-bytes 1 MiB: %v", len(rec.Chunks), werr)
	}
	if n <= 1<<20 {
		t.Fatalf("the record is %d bytes: not over the service's batch limit", n)
	}
}
