package storeserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veil-project/veil/internal/storage"
)

// pgSchemaVersion is the version of the tables below, recorded in veil_schema:
//   - 1: first version;
//   - 2: veil_blobs.gen, the generation of a blob row, so that an upload's pin and
//     reference apply to the row it pinned and not to one recorded anew after gc
//     collected it (meta_pg.go, hold). A database of version 1 is migrated when a node
//     opens it (pgMigrations);
//   - 3: veil_blobs.keyed: the row's copy in the blob store is named by its hash and its
//     generation (blobObject), so that a removal of an earlier row's copy that lands late
//     cannot delete it; rows recorded before (keyed false) keep the name by hash alone;
//   - 4: veil_reserved, the quota reservations of large puts in flight on every node
//     (meta_pg_quota.go);
//   - 5 (session 17): an empty file entry references no veil_blobs row (put.go:
//     emptyContent). Nodes of session 16 already recorded none without raising the
//     version, so nodes of session 15 started on the database failed on their empty
//     objects; nodes of sessions 15 and 16 refuse version 5 at start ("schema version 5,
//     this veil reads 4", "schema version 5 is newer than this veil's (4)"). The
//     migration from 4 keeps the row of the empty content for those still running
//     (sqlEmptyRow).
const pgSchemaVersion = 5

// pgSchema creates the tables (docs/design-store.md, "Several nodes"). Plain SQL types
// only (TEXT, BYTEA, BIGINT, SMALLINT, BOOLEAN, TIMESTAMPTZ), primary keys and no
// triggers, sequences or extensions: names are BYTEA so that order is byte order under
// any collation.
var pgSchema = []string{
	`CREATE TABLE veil_schema (version INT NOT NULL)`,
	`CREATE TABLE veil_users (
		name TEXT PRIMARY KEY,
		admin BOOLEAN NOT NULL,
		secret_hash BYTEA NOT NULL,
		quota BIGINT NOT NULL,
		used BIGINT NOT NULL,
		meta BIGINT NOT NULL,
		created BIGINT NOT NULL)`,
	`CREATE TABLE veil_entries (
		owner TEXT NOT NULL,
		dir BYTEA NOT NULL,
		name BYTEA NOT NULL,
		kind SMALLINT NOT NULL,
		size BIGINT NOT NULL,
		mtime BIGINT NOT NULL,
		hash BYTEA,
		PRIMARY KEY (owner, dir, name))`,
	`CREATE TABLE veil_dirs (
		owner TEXT NOT NULL,
		dir BYTEA NOT NULL,
		entries BIGINT NOT NULL,
		PRIMARY KEY (owner, dir))`,
	`CREATE TABLE veil_blobs (
		hash BYTEA PRIMARY KEY,
		size BIGINT NOT NULL,
		refs BIGINT NOT NULL,
		data BYTEA,
		pins BIGINT NOT NULL DEFAULT 0,
		pinned_until TIMESTAMPTZ,
		deleting BOOLEAN NOT NULL DEFAULT FALSE,
		gen BIGINT NOT NULL DEFAULT 0,
		keyed BOOLEAN NOT NULL DEFAULT FALSE)`,
	sqlReservedTable,
}

// sqlReservedTable holds the quota reservations of large puts in flight (schema version 4).
const sqlReservedTable = `CREATE TABLE IF NOT EXISTS veil_reserved (
		owner TEXT NOT NULL,
		id BIGINT NOT NULL,
		bytes BIGINT NOT NULL,
		until TIMESTAMPTZ NOT NULL,
		PRIMARY KEY (owner, id))`

// sqlEmptyRow gives the empty content a row with a count no reference ever brings to 0
// (pgEmptyRefs), inline and empty, whatever count the row of a database written before
// session 16 had left (no longer maintained). Nodes of version 4 still running beside
// this one after the migration look up that row to read an empty object, reference it
// when they store one and dereference it when they delete one: they keep working on the
// empty objects any node stored (without the row, a session 15 node failed to read or
// delete those of newer nodes, and its gc removed the row once its own deletes brought the
// count to 0). Nodes of this version read nothing from it; gc never collects it (a count
// above 0), and fsck does not compare its count.
var sqlEmptyRow = fmt.Sprintf(`INSERT INTO veil_blobs (hash, size, refs, data) VALUES ('\x%x', 0, %d, '\x')
	ON CONFLICT (hash) DO UPDATE SET refs = EXCLUDED.refs`, emptyContent, pgEmptyRefs)

// pgEmptyRefs is the count of the empty content's row after the migration to version 5:
// 2^62, which no number of dereferences by older nodes reaches 0 from, nor references
// overflow.
const pgEmptyRefs = 1 << 62

// pgMigrations[v] take the tables from version v to v+1. Each statement can run again (a
// node that dies part way); a step runs in one transaction with the version's advance,
// under the version row's lock, so nodes opening the database at once take turns
// (migrateStep); nodes still running the older version keep working
// meanwhile (their statements name no new column), and refuse the database once they
// restart. From 1: rows recorded before have generation 0, a row recorded anew gets a
// random one (hold), so an older row is told from its successor all the same. From 2:
// rows recorded before are not keyed (their copies keep their names); rows recorded by
// nodes of version 2 still running are not keyed either, and their copies are named as
// those nodes name them. From 3: nodes of version 3 still running neither record their
// reservations nor leave room for the others' (as before). From 4: nodes of version 4
// still running read, store and delete empty objects through the row sqlEmptyRow keeps.
var pgMigrations = map[int][]string{
	1: {`ALTER TABLE veil_blobs ADD COLUMN IF NOT EXISTS gen BIGINT NOT NULL DEFAULT 0`},
	2: {`ALTER TABLE veil_blobs ADD COLUMN IF NOT EXISTS keyed BOOLEAN NOT NULL DEFAULT FALSE`},
	3: {sqlReservedTable},
	4: {sqlEmptyRow},
}

// pgTuning are PostgreSQL storage settings for the content column, which holds encrypted
// (incompressible) inline content of up to InlineMax bytes: rows up to a page stay in the
// table itself, larger values go out of line without a compression attempt. Saved per put
// of 4 KiB: a failed pglz compression and three TOAST rows with their index entries. They
// change no result; a PostgreSQL-compatible database without TOAST refuses them and is
// used without (createSchema ignores their errors).
var pgTuning = []string{
	`ALTER TABLE veil_blobs SET (toast_tuple_target = 8160)`,
	`ALTER TABLE veil_blobs ALTER COLUMN data SET STORAGE EXTERNAL`,
}

// ErrDBInitialized is a database that already holds a store's tables.
var ErrDBInitialized = errors.New("the database already holds a veil store (copy the first node's data directory instead of running init again)")

// createSchema creates the tables in one transaction, refusing a database that has them.
func createSchema(ctx context.Context, dsn string) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return fmt.Errorf("metadata database: %v", redactErr(err))
	}
	defer pool.Close()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables
			WHERE table_name = 'veil_schema' AND table_schema = current_schema())`).Scan(&exists); err != nil {
			return pgFault(err)
		}
		if exists {
			return ErrDBInitialized
		}
		for _, q := range pgSchema {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO veil_schema (version) VALUES ($1)`, pgSchemaVersion)
		return err
	})
	if err != nil {
		return err
	}
	for _, q := range pgTuning {
		pool.Exec(ctx, q) // optional: see pgTuning
	}
	return nil
}

// checkSchema refuses a database without the tables or with a newer version of them,
// and migrates an older version (pgMigrations), one version per transaction that holds
// the veil_schema row's lock (FOR UPDATE): nodes opening the database at once take turns,
// each reading the version the last one left. Found by review: without the lock, two
// nodes opening a database of version 3 at once both ran CREATE TABLE IF NOT EXISTS, which
// PostgreSQL does not serialize, and one refused to start on a duplicate key
// (TestPGConcurrentMigration).
func checkSchema(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		var v int
		err := pool.QueryRow(ctx, `SELECT version FROM veil_schema`).Scan(&v)
		if err != nil {
			return fmt.Errorf("metadata database: no veil schema (%w): %w", ErrNotInitialized, pgFault(err))
		}
		if v == pgSchemaVersion {
			return nil
		}
		if v > pgSchemaVersion { // what an operator upgrading the nodes one by one meets
			return fmt.Errorf("metadata database: schema version %d is newer than this veil's (%d): a newer veil's node migrated it; upgrade veil on this node too", v, pgSchemaVersion)
		}
		if _, ok := pgMigrations[v]; !ok {
			return fmt.Errorf("metadata database: schema version %d, this veil reads %d", v, pgSchemaVersion)
		}
		if err := migrateStep(ctx, pool); err != nil {
			return err
		}
	}
}

// migrateStep takes the tables from the version they are at to the next, in a transaction
// holding the version row's lock; if another node migrated them meanwhile, it finds the
// version it left and does that step, or nothing.
func migrateStep(ctx context.Context, pool *pgxpool.Pool) error {
	// READ COMMITTED whatever the server's default: a node that waited for the lock then
	// reads the row the other left (at a stricter level it would fail to serialize).
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var v int
		if err := tx.QueryRow(ctx, `SELECT version FROM veil_schema FOR UPDATE`).Scan(&v); err != nil {
			return fmt.Errorf("metadata database: %w", pgFault(err))
		}
		steps, ok := pgMigrations[v]
		if v >= pgSchemaVersion || !ok {
			return nil // done meanwhile, or newer: checkSchema reads it again
		}
		for _, q := range steps {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("metadata database: migrating schema version %d to %d (needs a user allowed to alter the tables): %w", v, v+1, pgFault(err))
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE veil_schema SET version = $2 WHERE version = $1`, v, v+1); err != nil {
			return fmt.Errorf("metadata database: migrating schema version %d to %d: %w", v, v+1, pgFault(err))
		}
		return nil
	})
}

// checkDB accepts a postgres:// URL without a password (the data directory records it:
// give the password in PGPASSWORD or ~/.pgpass, which the driver reads).
func checkDB(dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" && u.Query().Get("host") == "" {
		return fmt.Errorf("--db must be a postgres://host/dbname URL: %w", storage.ErrInvalidName)
	}
	if _, has := u.User.Password(); has {
		return fmt.Errorf("--db %q carries a password: give it in PGPASSWORD or ~/.pgpass, it would be recorded", u.Redacted())
	}
	return nil
}
