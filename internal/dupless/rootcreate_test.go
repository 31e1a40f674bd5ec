package dupless

import (
	"errors"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// rootObject matches the request path of a numbered root's object on S3.
var rootObject = regexp.MustCompile(`/\.veil/roots/[0-9a-f]{16}$`)

// s3Devices returns a maker of devices of one user on one bucket of srv reached at
// endpoint, each with its own S3 backend (and caches) and local state.
func s3Devices(t *testing.T, srv *testutil.S3Server, endpoint, bucket string) func() *Client {
	master := NewMasterKey()
	return func() *Client {
		c, err := New(srv.Open(t, endpoint, bucket, "veil"), master, Options{Keys: mle.LocalKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
}

// Two devices publish the same root number on a plain S3 bucket at the same instant: a
// proxy holds the first two writes of a numbered root (a create, or the copy of a move)
// until both have come. Exactly one wins the number; the other finds it taken and
// publishes its change as the next root; no root is overwritten, so neither device sees
// a fork, and the newest root lists both changes. Before the create (storage.Creator),
// publishing moved the root to its number, a check then a copy on S3: both copies
// succeeded, one root replaced the other, and its device's next read was a rollback error
// with its folder missing from the newest root.
func TestRootPublishRaceOnS3(t *testing.T) {
	srv := testutil.StartS3(t)
	var armed atomic.Bool
	var arrived atomic.Int64
	both := make(chan struct{})
	ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if armed.Load() && r.Method == http.MethodPut && rootObject.MatchString(r.URL.Path) {
			switch arrived.Add(1) {
			case 1:
				select {
				case <-both:
				case <-time.After(20 * time.Second):
				}
			case 2:
				close(both)
			}
		}
		next.ServeHTTP(w, r)
	})
	dev := s3Devices(t, srv, ep, "race")
	a, b := dev(), dev()
	if err := a.Mkdir(ctx, "/base"); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, c := range []*Client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Mkdir(ctx, []string{"/from-a", "/from-b"}[i])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if arrived.Load() < 2 {
		t.Fatalf("%d writes of a numbered root while armed, want both devices' at once", arrived.Load())
	}
	for i, c := range []*Client{a, b, dev()} {
		entries, err := c.List(ctx, "/", false)
		if err != nil {
			t.Fatalf("device %d after publishing at the same instant: %v", i, err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Path)
		}
		sort.Strings(names)
		if got := len(names); got != 3 || names[0] != "base" || names[1] != "from-a" || names[2] != "from-b" {
			t.Fatalf("device %d lists %q, want base, from-a and from-b", i, names)
		}
	}
	snaps, err := dev().Snapshots(ctx)
	if err != nil || len(snaps) != 3 {
		t.Fatalf("snapshots %+v (error %v), want 3: the first, the winner's and the loser's after it", snaps, err)
	}
}

// On an S3 server that does not honour If-None-Match (here one that ignores it), the
// client learns so from the backend (ErrNoConditions) and publishes by move, as before:
// every command's root is published, nothing is refused.
func TestRootPublishOnS3WithoutConditions(t *testing.T) {
	srv := testutil.StartS3(t)
	ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		srv.WithoutConditions(t, r)
		next.ServeHTTP(w, r)
	})
	dev := s3Devices(t, srv, ep, "plain")
	a, b := dev(), dev()
	for i, dir := range []string{"/one", "/two", "/three"} {
		if err := []*Client{a, b, a}[i].Mkdir(ctx, dir); err != nil {
			t.Fatalf("mkdir %s: %v", dir, err)
		}
	}
	if err := a.be.(storage.Creator).PutNew(ctx, rootsDir, "x", bytesReader(nil), 0); !errors.Is(err, storage.ErrNoConditions) {
		t.Fatalf("a create on this server: %v, want ErrNoConditions", err)
	}
	snaps, err := dev().Snapshots(ctx)
	if err != nil || len(snaps) != 3 {
		t.Fatalf("snapshots %+v (error %v), want 3", snaps, err)
	}
}
