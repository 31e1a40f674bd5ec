package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// Move must never replace an existing destination. When the S3 server fails the check of
// the destination (here a 403 on its HEAD, as a flaky or misconfigured server may answer),
// Move must fail, not take the failed check for "absent" and copy over the destination.
func TestMoveDoesNotOverwriteWhenDestinationCheckFails(t *testing.T) {
	srv := testutil.StartS3(t)
	var failing atomic.Bool
	ep := srv.Proxy(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if failing.Load() && r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/veil/dst") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
	ctx := context.Background()
	b := srv.Open(t, ep, "movecheck", "veil")
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
