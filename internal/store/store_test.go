package store

import (
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storage/storagetest"
)

// TestConformanceInProcess runs the storage contract against a namespace directly.
func TestConformanceInProcess(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		ns, _ := addUser(t, newTestService(t, Config{}), "alice")
		return ns
	})
}

// TestConformanceRemoteTLS runs the contract through the HTTP API on a real TLS listener,
// the client pinning the generated CA from the user's credential.
func TestConformanceRemoteTLS(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		s := newTestService(t, Config{})
		_, cred := addUser(t, s, "alice")
		b, err := remote.New(serve(t, s), cred)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	})
}
