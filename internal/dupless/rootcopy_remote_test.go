package dupless

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver/storetest"
)

// copyService is a real storage service (optionally one from before batch version 4,
// which refuses match conditions) that counts the requests it gets and the lock objects
// written; it returns a remote backend to it.
func copyService(t *testing.T, older bool, requests, locks, refused *atomic.Int64) *remote.Backend {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	h := s.Handler()
	if older {
		h = storetest.OlderBatches(t, h, refused)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "locks") {
			locks.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cred.CA = ""
	be, err := remote.New(srv.URL, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// On the storage service, a lone put on the device's root copy is one request (its
// batch, with root n's match: copyMatch; the keys are local here), and a service that
// rolled back root n (another device's root under the lost number) refuses it: the put
// reports the rollback. On a service from before match conditions, the refused batch
// costs a read of root n and the batch again, still without the lock (2 requests more).
func TestRootCopyStorageService(t *testing.T) {
	if !deviceNow().ok {
		t.Skip("no boot clock here")
	}
	for _, older := range []bool{false, true} {
		name := "current"
		if older {
			name = "older than batch version 4"
		}
		t.Run(name, func(t *testing.T) {
			var requests, locks, refused atomic.Int64
			be := copyService(t, older, &requests, &locks, &refused)
			device := profileDevices(t, be, true)
			a := device()
			dir := t.TempDir()
			seed := uint64(700)
			put := func(c *Client, name string) error {
				seed++
				write(t, filepath.Join(dir, name), randBytes(4096, seed))
				sum, err := c.Put(ctx, []string{filepath.Join(dir, name)}, "")
				if err == nil {
					err = sum.Err()
				}
				return err
			}
			for _, name := range []string{"first", "second"} { // the lock, then a read of root 1
				if err := put(a(), name); err != nil {
					t.Fatal(err)
				}
			}
			requests.Store(0)
			locks.Store(0)
			refused.Store(0)
			if err := put(a(), "third"); err != nil {
				t.Fatal(err)
			}
			want := int64(1)
			if older {
				want = 3
			}
			if n, l, r := requests.Load(), locks.Load(), refused.Load(); n != want || l != 0 || r != map[bool]int64{false: 0, true: 1}[older] {
				t.Fatalf("lone put on the root copy: %d requests, %d locks, %d refused batches; want %d, 0, %d", n, l, r, want, map[bool]int64{false: 0, true: 1}[older])
			}
			n, _, _, err := a().mem.Load()
			if err != nil {
				t.Fatal(err)
			}
			if err := be.Delete(ctx, rootsDir, rootName(n)); err != nil { // the rollback
				t.Fatal(err)
			}
			if err := put(device()(), "other"); err != nil {
				t.Fatal(err)
			}
			if err := put(a(), "mine"); !errors.Is(err, ErrRollback) {
				t.Fatalf("lone put on the copy of a root the service lost: %v, want %v", err, ErrRollback)
			}
			c := device()()
			for _, name := range []string{"first", "second", "other"} {
				sameFile(t, c, filepath.Join(dir, name), name)
			}
		})
	}
}
