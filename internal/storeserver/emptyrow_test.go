package storeserver

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/veil-project/veil/internal/testutil"
)

// The statements of a node of schema version 4 (sessions 15 and 16) that touch the empty
// content's row when, still running after a node of this version migrated the database,
// it reads, stores or deletes an empty object (session 15) or collects garbage (both).
const (
	v4Read  = `SELECT size, refs, data, CASE WHEN keyed THEN gen ELSE 0 END FROM veil_blobs WHERE hash = $1 AND NOT deleting`
	v4Store = `INSERT INTO veil_blobs (hash, size, refs, data)
		SELECT hash, size, refs, data FROM unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bytea[]) WITH ORDINALITY AS d(hash, size, refs, data, i) ORDER BY i
		ON CONFLICT (hash) DO UPDATE SET refs = veil_blobs.refs + EXCLUDED.refs`
	v4Deref = `WITH u AS (UPDATE veil_blobs SET refs = GREATEST(refs + $2, 0)
		WHERE hash = $1 AND NOT deleting AND gen = ALL($3::bigint[]) RETURNING 1)
		SELECT 1 / (SELECT count(*) FROM u)::int`
	v4Collect = `DELETE FROM veil_blobs WHERE refs = 0 AND data IS NOT NULL RETURNING size`
)

// A database of schema version 4 is migrated to 5 when a node of this version opens it,
// and nodes of version 4 still running beside it keep working on empty objects: a session
// 15 node looks up the empty content's row to read one, references it to store one and
// dereferences it to delete one. Found by review: session 16 nodes stored empty objects
// without a row and without raising the version, so a session 15 node beside them (or
// started on their database) failed to read or delete their locks and marks, and its gc
// removed the row of a database written before once its deletes brought the count to 0.
// From a database a session 16 node wrote (no row) and one a session 15 node wrote (a row
// with a count of its own).
func TestPGOlderNodeEmptyObjects(t *testing.T) {
	for _, from := range []string{"session 16", "session 15"} {
		t.Run(from, func(t *testing.T) { testPGOlderNodeEmptyObjects(t, from == "session 15") })
	}
}

func testPGOlderNodeEmptyObjects(t *testing.T, withRow bool) {
	dsn := testutil.SharedPostgres(t).NewSchema(t)
	dir := t.TempDir()
	if err := InitDB(dir, dsn, LocalBlobs, nil); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, ".veil/locks", "l1", nil) // no row, as session 16 stored it
	putBytes(t, ns, "", "small", []byte("small"))
	s.Close()
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := c.Exec(t.Context(), q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	exec(`UPDATE veil_schema SET version = 4`)
	if withRow { // session 15's puts of two empty objects
		exec(v4Store, [][]byte{emptyContent[:]}, []int64{0}, []int64{2}, [][]byte{{}})
	}

	s, err = Open(dir, Config{})
	if err != nil {
		t.Fatalf("open a version 4 database: %v", err)
	}
	defer s.Close()
	var v int
	if err := c.QueryRow(t.Context(), `SELECT version FROM veil_schema`).Scan(&v); err != nil || v != 5 {
		t.Fatalf("schema version after open: %d %v, want 5", v, err)
	}
	olderReads := func(when string) {
		t.Helper()
		var size, refs, key int64
		var data []byte
		if err := c.QueryRow(t.Context(), v4Read, emptyContent[:]).Scan(&size, &refs, &data, &key); err != nil || data == nil || len(data) != 0 || size != 0 {
			t.Fatalf("%s: an older node's read of an empty object finds %d bytes, data %x (nil %v), %v", when, size, data, data == nil, err)
		}
		if refs < pgEmptyRefs-10 {
			t.Fatalf("%s: the empty content's count is %d, want about %d", when, refs, int64(pgEmptyRefs))
		}
	}
	olderReads("after the migration")
	for range 3 { // an older node deletes locks of newer nodes
		exec(v4Deref, emptyContent[:], -1, []int64{})
	}
	exec(v4Store, [][]byte{emptyContent[:]}, []int64{0}, []int64{1}, [][]byte{{}}) // and stores one
	exec(v4Collect)
	olderReads("after an older node's deletes, put and gc")

	ns = mustNS(t, s, "alice")
	putBytes(t, ns, ".veil/locks", "l2", nil)
	for _, name := range []string{"l1", "l2"} {
		if got, err := getBytes(t, ns, ".veil/locks", name); err != nil || len(got) != 0 {
			t.Fatalf("empty object %s: %q %v", name, got, err)
		}
		if err := ns.Delete(t.Context(), ".veil/locks", name); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := getBytes(t, ns, "", "small"); err != nil || !bytes.Equal(got, []byte("small")) {
		t.Fatalf("content stored before the migration: %q %v", got, err)
	}
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 0 {
		t.Fatalf("gc: %+v %v, want nothing collected", rep, err)
	}
	olderReads("after gc")
	fsckNoGarbage(t, s, "after the migration")
}
