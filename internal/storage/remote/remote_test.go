package remote_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storage/storagetest"
	"github.com/veil-project/veil/internal/storeserver/storetest"
	"github.com/veil-project/veil/internal/storewire"
)

// serveStore runs a fresh store on a real loopback TLS listener for one test.
func serveStore(t *testing.T) (string, storewire.Credential) {
	return serveStoreOn(t, func(ln net.Listener) net.Listener { return ln })
}

// serveStoreOn is serveStore with the listener wrapped by wrap (to watch connections).
// storeClient is a client of a fresh service (serveStore), closed when the test ends.
func storeClient(t *testing.T) *remote.Backend {
	t.Helper()
	url, cred := serveStore(t)
	b, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func serveStoreOn(t *testing.T, wrap func(net.Listener) net.Listener) (string, storewire.Credential) {
	s, cred, _ := storetest.Open(t, storetest.Options{})
	return storetest.Serve(t, s, wrap), cred
}

// TestConformance runs the storage contract through the HTTPS API of a real store, the
// client pinning the store's CA from the user's credential.
func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		url, cred := serveStore(t)
		b, err := remote.New(url, cred)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}

// TestPinnedCA checks that a credential with another store's CA is refused by TLS.
func TestPinnedCA(t *testing.T) {
	url, cred := serveStore(t)
	_, other := serveStore(t)
	cred.CA = other.CA
	b, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.List(t.Context(), ""); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a server outside the pinned CA was trusted: %v", err)
	}
}

func TestBadEndpoint(t *testing.T) {
	_, cred := serveStore(t)
	for _, e := range []string{"", "ftp://x", "https://", "localhost:1"} {
		if _, err := remote.New(e, cred); err == nil {
			t.Errorf("endpoint %q accepted", e)
		}
	}
}

// A 3xx from the service is an error, not an instruction: following it would send the
// user's credentials and data wherever Location points (here plain http://).
func TestRedirectNotFollowed(t *testing.T) {
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	_, cred := serveStore(t)
	cred.CA = ""
	b, err := remote.New(redirecting.URL, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Put(t.Context(), "d", "f", strings.NewReader("secret"), 6); err == nil {
		t.Fatal("put through a redirect succeeded")
	}
	if _, err := b.List(t.Context(), ""); err == nil {
		t.Fatal("list through a redirect succeeded")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the redirect target got %d requests", n)
	}
}
