package keyserver

import (
	"context"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// ratelimit.db is the server's own file (0600): a value of another length than 16 bytes
// (a torn or foreign write) reads as absent, so the client starts the epoch afresh; it
// never affects keys or other clients (docs/security.md, "ObliviSync and the key server: every field").
func TestFieldsRateLimitValueLength(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rl.db")
	s, err := openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []string{"a", "b"} {
		if ok, err := s.Take(ctx, c, 1, 2, 2); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCounts).Put([]byte("a"), []byte{1, 2, 3}) })
	db.Close()
	s, err = openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.Take(ctx, "a", 1, 2, 2); !ok || err != nil {
		t.Fatalf("client with a 3-byte value: %v %v, want a fresh budget", ok, err)
	}
	if ok, err := s.Take(ctx, "b", 1, 1, 2); ok || err != nil {
		t.Fatalf("other client: %v %v, want its spent budget kept", ok, err)
	}
}
