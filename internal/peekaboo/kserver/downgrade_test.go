package kserver

import (
	"crypto/rand"
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/server"
)

// TestDowngradeAndUpgradeAgain: a K-server downgraded to a veil that keeps no replay mark,
// which answers private queries (stamped up to a replay window ahead) without moving the
// mark, then upgraded again, refuses those queries: the first start after it finds a
// transaction it did not write (meta/writer, writer.go) and refuses private queries
// stamped up to a window ahead, as on state without a mark. It found the mark it had left
// below those stamps and answered them again (a replay: the XOR of two answers for the
// V-server). Keyword queries stamped after the mark are served. Without such an open in
// between (a clean restart, a crash after a publication) nothing more is refused.
func TestDowngradeAndUpgradeAgain(t *testing.T) {
	dir, now := t.TempDir(), time.Now()
	open := initAt(t, dir, &now)
	at := func(d time.Duration) uint64 { return uint64(now.Add(d).UnixMilli()) }
	nonce := func() (n [16]byte) { rand.Read(n[:]); return n }
	var s *Server
	private := func(n [16]byte, stamp uint64) uint8 {
		st, _ := s.replay.verdict(n, stamp, now, true)
		return st
	}

	s = open()
	if st := private(nonce(), at(0)); st != 0 {
		t.Fatalf("a private query on a new K-server: %d", st)
	}
	if _, err := s.update(nil, func(*bbolt.Tx) error { return nil }); err != nil { // a publication
		t.Fatal(err)
	}
	s.db.Close() // a crash: not an older veil
	now = now.Add(markStep + time.Millisecond)
	s = open()
	if st := private(nonce(), at(0)); st != 0 {
		t.Fatalf("a private query after a crash: %d", st)
	}
	checkWriter(t, s.db)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Millisecond)
	s = open() // a clean restart
	if st := private(nonce(), at(0)); st != 0 {
		t.Fatalf("a private query after a clean restart: %d", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// An older veil opens the file as it did (server.OpenState, its buckets) and answers
	// a private query stamped 20 s ahead, in memory only.
	db, err := server.OpenState(filepath.Join(dir, FileDB), "K-server", "1", time.Second, bucketKeys, pir.BucketName)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	now = now.Add(5 * time.Second)
	answered := nonce()
	answeredAt := at(20 * time.Second)
	now = now.Add(10 * time.Second) // upgraded again
	s = open()
	defer s.Close()
	if st := private(answered, answeredAt); st != statusStale {
		t.Fatalf("a private query the older veil answered, after the upgrade: %d, want %d (stale)", st, statusStale)
	}
	if st := s.replay.check(nonce(), at(0), now); st != 0 {
		t.Fatalf("a keyword query after the upgrade: %d", st)
	}
	if m, ok, err := readMark(s.db); err != nil || !ok || m < now.Add(DefaultConfig().ReplayWindow).UnixMilli() {
		t.Fatalf("stored mark %v (%v %v), want a replay window ahead", time.UnixMilli(m), ok, err)
	}
	checkWriter(t, s.db)
}

// checkWriter: meta/writer is the u64 big-endian id of the last transaction committed.
func checkWriter(t *testing.T, db *bbolt.DB) {
	t.Helper()
	db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyWriter); len(v) != 8 || binary.BigEndian.Uint64(v) != uint64(tx.ID()) {
			t.Fatalf("meta/writer %x, last transaction %d", v, tx.ID())
		}
		return nil
	})
}
