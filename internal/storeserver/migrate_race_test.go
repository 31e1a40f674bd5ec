package storeserver

import (
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veil-project/veil/internal/testutil"
)

// Nodes of this version started at once on a database of an older version (a rolling
// upgrade that restarts several nodes together) all start: the migration is run by one
// at a time (checkSchema), as pgMigrations promises. Found by review: two nodes both ran
// version 3's CREATE TABLE IF NOT EXISTS, which PostgreSQL does not serialize, and one
// refused to start ("duplicate key value violates unique constraint
// pg_type_typname_nsp_index") on the first of these rounds. Also with a server whose
// default isolation is serializable (a node that waited must still read the version the
// other left).
func TestPGConcurrentMigration(t *testing.T) {
	for _, c := range []struct{ name, iso string }{{"default", ""}, {"serializable", "&default_transaction_isolation=serializable"}} {
		t.Run(c.name, func(t *testing.T) { testPGConcurrentMigration(t, c.iso) })
	}
}

func testPGConcurrentMigration(t *testing.T, iso string) {
	for round := range 5 {
		dsn := testutil.SharedPostgres(t).NewSchema(t) + iso
		if err := createSchema(t.Context(), dsn); err != nil {
			t.Fatal(err)
		}
		c, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		// The tables of version 2.
		for _, q := range []string{`DROP TABLE veil_reserved`, `ALTER TABLE veil_blobs DROP COLUMN keyed`, `UPDATE veil_schema SET version = 2`} {
			if _, err := c.Exec(t.Context(), q); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				pool, err := pgxpool.New(t.Context(), dsn)
				if err != nil {
					errs[i] = err
					return
				}
				defer pool.Close()
				errs[i] = checkSchema(t.Context(), pool)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: node %d of 6 opening a version-2 database at once: %v", round, i, err)
			}
		}
		var v int
		if err := c.QueryRow(t.Context(), `SELECT version FROM veil_schema`).Scan(&v); err != nil || v != pgSchemaVersion {
			t.Fatalf("round %d: version %d %v after the migration, want %d", round, v, err, pgSchemaVersion)
		}
		c.Close(t.Context())
	}
}
