package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storewire"
)

func randBytes(seed uint64, n int) []byte {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

func putBytes(t *testing.T, b storage.Backend, dir, name string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), dir, name, bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("put %s/%s: %v", dir, name, err)
	}
}

func getBytes(t *testing.T, b storage.Backend, dir, name string) ([]byte, error) {
	t.Helper()
	rc, err := b.Get(context.Background(), dir, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func mustStats(t *testing.T, s *Service) Stats {
	t.Helper()
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func remoteFor(t testing.TB, url string, cred storewire.Credential) *remote.Backend {
	t.Helper()
	b, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestDedupTwoUsers is issue 4's dedup proof: two users store the same 50 MiB under
// different names (plus distinct data) through the HTTPS API; physical bytes grow by one
// copy; each reads back exactly their bytes; deleting one name keeps the other readable;
// gc after deleting both reclaims the content.
func TestDedupTwoUsers(t *testing.T) {
	forEachMeta(t, testDedupTwoUsers)
}

func testDedupTwoUsers(t *testing.T, newService func(testing.TB, Config) *Service) {
	s := newService(t, Config{})
	_, ca := addUser(t, s, "alice")
	_, cb := addUser(t, s, "bob")
	url := serve(t, s)
	alice, bob := remoteFor(t, url, ca), remoteFor(t, url, cb)

	shared := randBytes(1, 50<<20)
	ownA, ownB := randBytes(2, 3<<20), randBytes(3, 5000)
	putBytes(t, alice, "docs", "report.bin", shared)
	putBytes(t, alice, "", "a-only", ownA)
	before := mustStats(t, s)
	putBytes(t, bob, "backup/2026", "same content other name", shared)
	putBytes(t, bob, "", "b-only", ownB)
	after := mustStats(t, s)

	if grew := after.PhysicalBytes - before.PhysicalBytes; grew != int64(len(ownB)) {
		t.Fatalf("physical bytes grew by %d for bob's upload, want %d (only his distinct data)", grew, len(ownB))
	}
	wantLogical := int64(2*len(shared) + len(ownA) + len(ownB))
	if after.LogicalBytes != wantLogical || after.PhysicalBytes != int64(len(shared)+len(ownA)+len(ownB)) {
		t.Fatalf("stats %+v, want logical %d", after, wantLogical)
	}
	if after.Objects != 4 || after.Blobs != 3 || after.DedupRatio < 1.9 {
		t.Fatalf("stats %+v", after)
	}
	for _, c := range []struct {
		b         storage.Backend
		dir, name string
		want      []byte
	}{{alice, "docs", "report.bin", shared}, {alice, "", "a-only", ownA},
		{bob, "backup/2026", "same content other name", shared}, {bob, "", "b-only", ownB}} {
		got, err := getBytes(t, c.b, c.dir, c.name)
		if err != nil || sha256.Sum256(got) != sha256.Sum256(c.want) {
			t.Fatalf("read back %s/%s: %v (equal: %v)", c.dir, c.name, err, bytes.Equal(got, c.want))
		}
	}
	// Namespaces are private: bob cannot see alice's names.
	if _, err := bob.Stat(t.Context(), "docs", "report.bin"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("bob stats alice's name: %v", err)
	}

	if err := alice.Delete(t.Context(), "docs", "report.bin"); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 0 {
		t.Fatalf("gc with bob's reference alive: %+v %v", rep, err)
	}
	if got, err := getBytes(t, bob, "backup/2026", "same content other name"); err != nil || !bytes.Equal(got, shared) {
		t.Fatalf("bob's copy after alice's delete: %v", err)
	}
	if err := bob.Delete(t.Context(), "backup/2026", "same content other name"); err != nil {
		t.Fatal(err)
	}
	rep, err := s.GC(t.Context())
	if err != nil || rep.Blobs != 1 || rep.Bytes != int64(len(shared)) {
		t.Fatalf("gc after both deletes: %+v %v", rep, err)
	}
	end := mustStats(t, s)
	if end.PhysicalBytes != int64(len(ownA)+len(ownB)) || end.GarbageBytes != 0 {
		t.Fatalf("stats after gc: %+v", end)
	}
	fsckClean(t, s)
}

func fsckClean(t *testing.T, s *Service) FsckReport {
	t.Helper()
	rep, err := s.Fsck(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Fatalf("fsck: %v", rep.Problems)
	}
	return rep
}
