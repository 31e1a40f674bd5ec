package storeserver

import (
	"bytes"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/veil-project/veil/internal/testutil"
)

// createSchema applies pgTuning on PostgreSQL: the content column is stored without a
// compression attempt, and rows up to a page stay in the table.
func TestPGSchemaTuning(t *testing.T) {
	dsn := testutil.SharedPostgres(t).NewSchema(t)
	if err := createSchema(t.Context(), dsn); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	var storage string
	var opts []string
	err = c.QueryRow(t.Context(), `SELECT a.attstorage::text, coalesce(r.reloptions, '{}') FROM pg_attribute a JOIN pg_class r ON r.oid = a.attrelid
		WHERE a.attrelid = 'veil_blobs'::regclass AND a.attname = 'data'`).Scan(&storage, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if storage != "e" || len(opts) != 1 || opts[0] != "toast_tuple_target=8160" {
		t.Fatalf("veil_blobs.data storage %q, table options %q; want e (external) and toast_tuple_target=8160", storage, opts)
	}
}

// A database of schema version 1 (no veil_blobs.gen) is migrated when a node opens it: the
// content recorded before keeps working (generation 0: pinned, referenced and collected
// like any other), and a database of a newer version than this veil's is refused.
func TestPGMigratesSchema1(t *testing.T) {
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
	data := randBytes(14, 100<<10)
	putBytes(t, ns, "", "old", data)
	s.Close()

	c, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(t.Context())
	exec := func(q string) {
		t.Helper()
		if _, err := c.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER TABLE veil_blobs DROP COLUMN gen`) // the tables of version 1
	exec(`UPDATE veil_schema SET version = 1`)

	s, err = Open(dir, Config{})
	if err != nil {
		t.Fatalf("open a version 1 database: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	var v int
	var gen int64
	if err := c.QueryRow(t.Context(), `SELECT version FROM veil_schema`).Scan(&v); err != nil || v != pgSchemaVersion {
		t.Fatalf("schema version after open: %d %v, want %d", v, err, pgSchemaVersion)
	}
	if err := c.QueryRow(t.Context(), `SELECT gen FROM veil_blobs WHERE data IS NULL`).Scan(&gen); err != nil || gen != 0 {
		t.Fatalf("generation of a row recorded before: %d %v, want 0", gen, err)
	}
	ns = mustNS(t, s, "alice")
	if got, err := getBytes(t, ns, "", "old"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("content recorded before the migration: %v", err)
	}
	putBytes(t, ns, "", "again", data) // pins and references the row of generation 0
	for _, name := range []string{"old", "again"} {
		if err := ns.Delete(t.Context(), "", name); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 1 {
		t.Fatalf("gc: %+v %v, want the blob collected", rep, err)
	}
	putBytes(t, ns, "", "new", data) // recorded anew, with a generation of its own
	if err := c.QueryRow(t.Context(), `SELECT gen FROM veil_blobs WHERE data IS NULL`).Scan(&gen); err != nil || gen == 0 {
		t.Fatalf("generation of a row recorded anew: %d %v, want one not 0", gen, err)
	}
	fsckClean(t, s)

	exec(`UPDATE veil_schema SET version = 99`)
	dir2 := t.TempDir()
	if err := os.CopyFS(dir2, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	if s2, err := Open(dir2, Config{}); err == nil {
		s2.Close()
		t.Fatal("a database of a newer schema version was opened")
	} else {
		t.Logf("newer version: %v", err)
	}
}
