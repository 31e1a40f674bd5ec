package storeserver

import (
	"bytes"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A bbolt store holding a blob record with a key (version 2) is refused when a binary
// older than session 15 opens it, rather than served: such a binary checks the database
// version byte in bucket meta at open (service.go: refused unless it is 1) but reads a
// version-2 blob record as a bad record. Found by review: the database version stayed 1,
// so an older 'veil store serve' started on the store and answered every file stored since
// as "content unreadable: integrity check failed" (its fsck, stats and gc did stop on the
// record). The version becomes 2 in the transaction that writes the first record with a
// key; a store without one stays openable by older binaries.
func TestBoltKeyedStoreRefusedByOlderBinaries(t *testing.T) {
	dir := t.TempDir()
	if err := InitDB(dir, "", LocalBlobs, nil); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := addUser(t, s, "alice")
	version := func() []byte {
		t.Helper()
		var v []byte
		if err := boltDB(t, s).View(func(tx *bolt.Tx) error {
			v = bytes.Clone(tx.Bucket(bucketMeta).Get([]byte("version")))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	olderOpens := func(v []byte) bool { return len(v) == 1 && v[0] == 1 } // the check of session 14's openDB
	putBytes(t, ns, "", "small", randBytes(61, 100))
	if v := version(); !olderOpens(v) {
		t.Fatalf("database version %v with inline content only: older binaries refuse a store they can read", v)
	}
	data := randBytes(62, 200<<10)
	putBytes(t, ns, "", "big", data)
	if v := version(); olderOpens(v) || !bytes.Equal(v, []byte{2}) {
		t.Fatalf("database version %v with a keyed blob record, want [2] (older binaries open it)", v)
	}
	s.Close()
	s2, err := Open(dir, Config{})
	if err != nil {
		t.Fatalf("reopen a store of database version 2: %v", err)
	}
	defer s2.Close()
	if got, err := getBytes(t, mustNS(t, s2, "alice"), "", "big"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after reopening: %v", err)
	}
}
