package storeserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// A database of schema version 1 (no veil_blobs.gen), 2 (no veil_blobs.keyed) or 3 (no
// veil_reserved) is migrated when a node opens it: the content recorded before keeps working (generation 0,
// or its own, and not keyed: its copy keeps the name by hash alone; pinned, referenced and
// collected like any other), content recorded anew is keyed, and a database of a newer
// version than this veil's is refused.
func TestPGMigratesSchema1(t *testing.T) {
	for _, from := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(from), func(t *testing.T) { testPGMigrates(t, from) })
	}
}

func testPGMigrates(t *testing.T, from int) {
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
	h := blobHash(t, s, "alice", "", "old")
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
	exec(`DROP TABLE veil_reserved`) // the tables of version 3
	exec(`UPDATE veil_schema SET version = 3`)
	// The tables and the blob store of version 2: the copy named by its hash alone.
	var gen int64
	if err := c.QueryRow(t.Context(), `SELECT gen FROM veil_blobs WHERE data IS NULL AND keyed`).Scan(&gen); err != nil {
		t.Fatal(err)
	}
	blobs := diskBlobs{filepath.Join(dir, "blobs")}
	keyed := from == 3
	if !keyed {
		if err := os.Rename(blobs.path(blobID{h, gen}), blobs.path(blobID{h: h})); err != nil {
			t.Fatal(err)
		}
		exec(`ALTER TABLE veil_blobs DROP COLUMN keyed`)
		exec(`UPDATE veil_schema SET version = 2`)
	}
	if from == 1 {
		exec(`ALTER TABLE veil_blobs DROP COLUMN gen`) // the tables of version 1
		exec(`UPDATE veil_schema SET version = 1`)
		gen = 0
	}

	s, err = Open(dir, Config{})
	if err != nil {
		t.Fatalf("open a version %d database: %v", from, err)
	}
	t.Cleanup(func() { s.Close() })
	var v, n int
	var got int64
	var isKeyed bool
	if err := c.QueryRow(t.Context(), `SELECT version FROM veil_schema`).Scan(&v); err != nil || v != pgSchemaVersion {
		t.Fatalf("schema version after open: %d %v, want %d", v, err, pgSchemaVersion)
	}
	if err := c.QueryRow(t.Context(), `SELECT count(*) FROM veil_reserved`).Scan(&n); err != nil {
		t.Fatalf("reservations after open: %v", err)
	}
	if err := c.QueryRow(t.Context(), `SELECT gen, keyed FROM veil_blobs WHERE data IS NULL`).Scan(&got, &isKeyed); err != nil || got != gen || isKeyed != keyed {
		t.Fatalf("row recorded before: generation %d keyed %v (%v), want %d, keyed %v", got, isKeyed, err, gen, keyed)
	}
	ns = mustNS(t, s, "alice")
	if got, err := getBytes(t, ns, "", "old"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("content recorded before the migration: %v", err)
	}
	putBytes(t, ns, "", "again", data) // pins and references the row recorded before
	fsckClean(t, s)
	for _, name := range []string{"old", "again"} {
		if err := ns.Delete(t.Context(), "", name); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 1 {
		t.Fatalf("gc: %+v %v, want the blob collected", rep, err)
	}
	if _, err := os.Stat(blobs.path(blobID{h, rowKey(gen, keyed)})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the copy of a row recorded before is left after gc: %v", err)
	}
	putBytes(t, ns, "", "new", data) // recorded anew, with a generation of its own
	if err := c.QueryRow(t.Context(), `SELECT gen, keyed FROM veil_blobs WHERE data IS NULL`).Scan(&got, &isKeyed); err != nil || got == 0 || !isKeyed {
		t.Fatalf("row recorded anew: generation %d keyed %v (%v), want one not 0, keyed", got, isKeyed, err)
	}
	if _, err := os.Stat(blobs.path(blobID{h, got})); err != nil {
		t.Fatalf("the copy of a row recorded anew: %v", err)
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
	} else if !strings.Contains(err.Error(), "newer than this veil's") || !strings.Contains(err.Error(), "upgrade veil on this node") {
		t.Fatalf("a newer schema's refusal does not say to upgrade: %v", err) // found deploying
	} else {
		t.Logf("newer version: %v", err)
	}
}
