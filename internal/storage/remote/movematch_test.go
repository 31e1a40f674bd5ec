package remote_test

import (
	"crypto/sha256"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
)

// Against a service older than conditional moves (session 14), MoveMatch fails with an
// error wrapping storage.ErrNoConditions (and storewire.ErrBadBatch, the service's 400
// bad_request), not ErrChanged, and moves nothing; a plain move still goes through.
func TestMoveMatchAgainstOlderService(t *testing.T) {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	var refused atomic.Int64
	srv := httptest.NewServer(storetest.OlderMoves(t, s.Handler(), &refused))
	t.Cleanup(srv.Close)
	cred.CA = ""
	b, err := remote.New(srv.URL, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if err := b.Put(ctx, "d", "f", strings.NewReader("v1"), 2); err != nil {
		t.Fatal(err)
	}
	err = b.MoveMatch(ctx, "d", "f", "k", "f", sha256.Sum256([]byte("v1")))
	if !errors.Is(err, storage.ErrNoConditions) || !errors.Is(err, storewire.ErrBadBatch) || errors.Is(err, storage.ErrChanged) || refused.Load() != 1 {
		t.Fatalf("a conditional move to an older service: %v (%d refused), want ErrNoConditions and ErrBadBatch", err, refused.Load())
	}
	t.Logf("the error: %v", err)
	if _, err := b.Stat(ctx, "d", "f"); err != nil {
		t.Fatalf("the refused move moved its source: %v", err)
	}
	if err := b.Move(ctx, "d", "f", "k", "f"); err != nil || refused.Load() != 1 {
		t.Fatalf("a plain move to an older service: %v (%d refused)", err, refused.Load())
	}
}

// Against a service with conditional moves, a condition that fails is ErrChanged (412
// changed), never ErrNoConditions.
func TestMoveMatchChangedOverHTTPS(t *testing.T) {
	b := storeClient(t)
	ctx := t.Context()
	if err := b.Put(ctx, "d", "f", strings.NewReader("v1"), 2); err != nil {
		t.Fatal(err)
	}
	err := b.MoveMatch(ctx, "d", "f", "k", "f", sha256.Sum256([]byte("v0")))
	if !errors.Is(err, storage.ErrChanged) || errors.Is(err, storage.ErrNoConditions) {
		t.Fatalf("a failed condition: %v, want ErrChanged", err)
	}
	if err := b.MoveMatch(ctx, "d", "f", "k", "f", sha256.Sum256([]byte("v1"))); err != nil {
		t.Fatalf("a condition that holds: %v", err)
	}
}
