package storeserver

import (
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
