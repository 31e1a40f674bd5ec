package storeserver

import (
	"context"
	"crypto/tls"
	"github.com/veil-project/veil/internal/testutil"
	bolt "go.etcd.io/bbolt"
	"net"
	"testing"

	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storewire"
)

// newTestService initializes a store (metadata in bbolt) in a temp dir and opens it.
func newTestService(t testing.TB, cfg Config) *Service {
	t.Helper()
	return newServiceOn(t, "", cfg)
}

// newPGService is newTestService with the metadata in PostgreSQL (a fresh schema of the
// package's shared server).
func newPGService(t testing.TB, cfg Config) *Service {
	t.Helper()
	return newServiceOn(t, testutil.SharedPostgres(t).NewSchema(t), cfg)
}

// metaBackends are the metadata databases tests run against.
var metaBackends = []struct {
	name string
	new  func(testing.TB, Config) *Service
}{{"bbolt", newTestService}, {"postgres", newPGService}}

// forEachMeta runs fn as a subtest per metadata database.
func forEachMeta(t *testing.T, fn func(t *testing.T, newService func(testing.TB, Config) *Service)) {
	for _, b := range metaBackends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.new) })
	}
}

func newServiceOn(t testing.TB, db string, cfg Config) *Service {
	t.Helper()
	return newServiceIn(t, t.TempDir(), db, cfg)
}

// newServiceIn initializes a store in dir (its metadata in db, or bbolt) and opens it.
func newServiceIn(t testing.TB, dir, db string, cfg Config) *Service {
	t.Helper()
	loc := LocalBlobs
	if cfg.Blobs != nil && cfg.BlobLocation == "" {
		cfg.BlobLocation = "s3://test-bucket" // the label the test's blob store is recorded under
	}
	if cfg.Blobs != nil {
		loc = cfg.BlobLocation
	}
	if err := InitDB(dir, db, loc, cfg.Blobs); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func addUser(t testing.TB, s *Service, name string, opts ...UserOption) (*Namespace, storewire.Credential) {
	t.Helper()
	cred, err := s.AddUser(name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Namespace(name)
	if err != nil {
		t.Fatal(err)
	}
	return ns, cred
}

// serve runs s on a loopback TLS listener until the test ends and returns its https URL.
func serve(t testing.TB, s *Service) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, server.Listeners{HTTP: ln}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	scheme := "https://"
	if s.cfg.InsecureHTTP {
		scheme = "http://"
	}
	return scheme + ln.Addr().String()
}

func tlsFor(t testing.TB, c storewire.Credential) *tls.Config {
	t.Helper()
	pool, err := c.CAPool()
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool}
}

// boltDB is the bbolt database of a store opened with the embedded metadata.
func boltDB(t testing.TB, s *Service) *bolt.DB {
	t.Helper()
	m, ok := s.meta.(*boltMeta)
	if !ok {
		t.Skip("needs the bbolt metadata store")
	}
	return m.db
}
