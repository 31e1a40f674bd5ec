package storeserver

import (
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/storagetest"
)

// TestConformanceInProcess runs the storage contract against a namespace directly.
func TestConformanceInProcess(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		storagetest.Run(t, func(t *testing.T) storage.Backend {
			ns, _ := addUser(t, newService(t, Config{}), "alice")
			return ns
		})
	})
}

// The same suite through the HTTPS API runs in internal/storage/remote.
