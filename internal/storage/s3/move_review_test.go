package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/s3"
	"github.com/veil-project/veil/internal/testutil"
)

// Move must never replace an existing destination. When the S3 server fails the check of
// the destination (here a 403 on its HEAD, as a flaky or misconfigured server may answer),
// Move must fail, not take the failed check for "absent" and copy over the destination.
func TestMoveDoesNotOverwriteWhenDestinationCheckFails(t *testing.T) {
	srv := testutil.StartS3(t)
	target, _ := url.Parse("http://" + srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	var failing atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() && r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/veil/dst") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	ctx := context.Background()
	b, err := s3.New(ctx, s3.Config{Endpoint: strings.TrimPrefix(proxy.URL, "http://"), Bucket: "movecheck", Prefix: "veil",
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, CreateBucket: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"dst": "the only copy", "src": "newer"} {
		if err := b.Put(ctx, "", name, strings.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
	}
	failing.Store(true)
	moveErr := b.Move(ctx, "", "src", "", "dst")
	failing.Store(false)
	rc, err := b.Get(ctx, "", "dst")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, []byte("the only copy")) {
		t.Fatalf("move with a failed destination check (error %v) replaced the destination: now %q", moveErr, got)
	}
	if moveErr == nil || errors.Is(moveErr, storage.ErrNotFound) {
		t.Fatalf("move error %v", moveErr)
	}
}
