package remote_test

import (
	"crypto/sha256"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
)

// olderService serves a real store whose batch parser stops at version 3, as a service
// from before match conditions answers: a version 4 body is 400 bad_request ("version 4,
// want 1 to 3") and nothing is stored; lower versions are served as usual.
func olderService(t *testing.T) (*remote.Backend, *storeserver.Namespace) {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	srv := httptest.NewServer(storetest.OlderBatches(t, s.Handler(), nil))
	t.Cleanup(srv.Close)
	cred.CA = ""
	b, err := remote.New(srv.URL, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	ns, err := s.Namespace("alice")
	if err != nil {
		t.Fatal(err)
	}
	return b, ns
}

// Against a service older than batch version 4, a batch with a match condition fails with
// an error wrapping storage.ErrNoConditions (and storewire.ErrBadBatch, the service's
// answer), not ErrChanged, and stores nothing; batches without one are still sent as
// version 3 or lower and stored.
func TestMatchAgainstOlderService(t *testing.T) {
	b, ns := olderService(t)
	ctx := t.Context()
	if err := storage.PutAll(ctx, b, []storage.Object{{Dir: "d", Name: "f", Data: []byte("v1")}, {Dir: "d", Name: "m", Absent: true},
		{Dir: "d", Name: "c", Data: []byte("c"), Create: true}}); err != nil {
		t.Fatalf("a version 3 batch: %v", err)
	}
	h := sha256.Sum256([]byte("v1"))
	err := storage.PutAll(ctx, b, []storage.Object{{Dir: "d", Name: "x", Data: []byte("x")}, {Dir: "d", Name: "f", Data: []byte("v2"), Match: &h}})
	if !errors.Is(err, storage.ErrNoConditions) || !errors.Is(err, storewire.ErrBadBatch) || errors.Is(err, storage.ErrChanged) {
		t.Fatalf("a match batch to an older service: %v, want ErrNoConditions and ErrBadBatch", err)
	}
	t.Logf("the error: %v", err)
	if _, err := ns.Stat(ctx, "d", "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the refused batch stored its other object (stat: %v)", err)
	}
	rc, err := ns.Get(ctx, "d", "f")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != "v1" {
		t.Fatalf("the refused batch replaced d/f: %q", got)
	}
}

// Against a service with match conditions, a failed match is ErrChanged (412 changed)
// naming the batch object, and never ErrNoConditions.
func TestMatchChangedOverHTTPS(t *testing.T) {
	b := storeClient(t)
	ctx := t.Context()
	if err := b.Put(ctx, "d", "f", strings.NewReader("v1"), 2); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte("v0"))
	err := b.PutBatch(ctx, []storage.Object{{Dir: "d", Name: "x", Data: []byte("x")}, {Dir: "d", Name: "f", Data: []byte("v2"), Match: &h}})
	if !errors.Is(err, storage.ErrChanged) || errors.Is(err, storage.ErrNoConditions) || !strings.Contains(err.Error(), "batch object 1 (d/f)") {
		t.Fatalf("a failed match: %v, want ErrChanged naming batch object 1 (d/f)", err)
	}
	t.Logf("the error: %v", err)
}
