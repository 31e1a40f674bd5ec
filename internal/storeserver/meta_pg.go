package storeserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/veil-project/veil/internal/storewire"
)

// pgMeta keeps the metadata in PostgreSQL (schema in meta_pg_schema.go), shared by any
// number of store nodes. Concurrency (docs/design-store.md, "Several nodes"):
//   - a write transaction (one group of the node's group commit) runs at READ COMMITTED
//     and first locks the rows of the users it changes, in name order (SELECT ... ORDER BY
//     name FOR UPDATE): a user's namespace and accounting change under that lock only,
//     so its reads see every earlier commit and two nodes never interleave on one user;
//   - reference counts are changed at the end of the transaction, in hash order, by
//     single-statement increments (row locks), so groups touching the same blobs from
//     two nodes never deadlock;
//   - serialization failures and deadlocks (SQLSTATE 40001, 40P01) rerun the transaction;
//   - gc coordination is in the blob rows: an upload pins its blob (pins+1, with a lease
//     pinned_until of Config.RequestTimeout for a node that dies holding it) before making
//     it durable and unpins it once its reference is committed; gc marks a blob deleting
//     only when it has no reference and no live pin, and a pin or a reference is refused
//     on a blob marked deleting (meta_pg_gc.go). A pin, its release and the upload's
//     reference name the row's generation (gen, random per row recorded): after gc
//     collected a row whose pin had run out, they never apply to the row another upload
//     records anew for the same content (hold).
type pgMeta struct {
	pool   *pgxpool.Pool
	commit *committer
	lease  time.Duration // how long a hold keeps gc away
}

// pgTimeout bounds one metadata transaction, retries included.
const pgTimeout = time.Minute

func openPGMeta(ctx context.Context, dsn string, lease time.Duration, groups func(int)) (*pgMeta, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("metadata database: %v", redactErr(err))
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		// The statements are prepared once per connection (pgx's statement cache) and take
		// their rows as arrays: a plan made for the arrays' lengths is no better than the
		// generic one, so planning at every execution is wasted (a tenth of PostgreSQL's
		// CPU per put). A database without the setting is used as it is.
		c.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("metadata database: %w", err)
	}
	if err := checkSchema(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	m := &pgMeta{pool: pool, lease: lease}
	m.commit = newCommitter(m.exec, groups)
	return m, nil
}

// redactErr drops pgx's parse error detail, which may quote the connection string.
func redactErr(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("connection string does not parse")
	}
	return err
}

func (m *pgMeta) update(_ context.Context, user string, fn func(metaTx) error) error {
	return m.commit.do(user, fn)
}

func (m *pgMeta) updateNames(_ context.Context, user string, names [][2]string, fn func(metaTx) error) error {
	return m.commit.doNames(user, names, fn)
}

// exec runs a group in one transaction (committer).
func (m *pgMeta) exec(group []*commitReq) error {
	var users []string
	for _, r := range group {
		if r.user != "" {
			users = append(users, r.user)
		}
	}
	slices.Sort(users)
	users = slices.Compact(users)
	ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
	defer cancel()
	locked := func(r *commitReq) bool { _, ok := slices.BinarySearch(users, r.user); return ok }
	return m.retryWrite(ctx, func(c *pgx.Conn) error {
		t := &pgTx{ctx: ctx, q: c, deltas: map[[32]byte]*blobDelta{}}
		if err := t.begin(users, group); err != nil {
			return err
		}
		// Requests of the same users that arrived while this group waited for their
		// locks join it (committer.more).
		if late := m.commit.more(len(group), locked); len(late) > 0 {
			group = append(group, late...)
			if err := t.join(late); err != nil {
				return err
			}
		}
		for _, r := range group {
			if err := r.fn(t); err != nil {
				return err
			}
		}
		if err := t.flush(); err != nil { // with the COMMIT
			return err
		}
		for _, fn := range t.commits {
			fn()
		}
		return nil
	})
}

// retryWrite runs fn, a write transaction that fn begins and commits itself on a
// connection of the pool (BEGIN travels with the group's first statements and COMMIT with
// its writes: two round trips per group commit), again after a serialization failure or a
// deadlock. A transaction fn leaves open is rolled back.
func (m *pgMeta) retryWrite(ctx context.Context, fn func(*pgx.Conn) error) error {
	for attempt := 0; ; attempt++ {
		err := m.onConn(ctx, fn)
		if err == nil || !retryable(err) || attempt >= 20 || ctx.Err() != nil {
			return pgFault(err)
		}
		time.Sleep(time.Duration(rand.IntN(1<<min(attempt, 6))+1) * time.Millisecond)
	}
}

func (m *pgMeta) onConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	pc, err := m.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer pc.Release() // a connection left in a transaction is closed, not reused
	c := pc.Conn()
	err = fn(c)
	if err != nil && c.PgConn().TxStatus() != 'I' && !c.IsClosed() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Exec(rctx, "ROLLBACK")
		cancel()
	}
	return err
}

// retry runs fn in a transaction, again after a serialization failure or a deadlock.
func (m *pgMeta) retry(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := pgx.BeginTxFunc(ctx, m.pool, opts, fn)
		if err == nil || !retryable(err) || attempt >= 20 || ctx.Err() != nil {
			return pgFault(err)
		}
		time.Sleep(time.Duration(rand.IntN(1<<min(attempt, 6))+1) * time.Millisecond)
	}
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// pgFault names a database that cannot be reached, or that ended the connection (a
// restart or failover: SQLSTATE 57P01..., 08...), as storewire.ErrUnavailable (503: the
// client retries, or fails over to another node).
func pgFault(err error) error {
	var ce *pgconn.ConnectError
	var ne net.Error
	var pe *pgconn.PgError
	ended := errors.As(err, &pe) && (strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "08"))
	if err != nil && (errors.As(err, &ce) || errors.As(err, &ne) || ended) {
		return fmt.Errorf("%w: metadata database: %v", storewire.ErrUnavailable, err)
	}
	return err
}

func (m *pgMeta) view(ctx context.Context, fn func(metaTx) error) error {
	ctx, cancel := context.WithTimeout(ctx, pgTimeout)
	defer cancel()
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return m.retry(ctx, opts, func(tx pgx.Tx) error {
		return fn(&pgTx{ctx: ctx, q: tx, readOnly: true})
	})
}

// holdWait bounds how long an upload waits for gc to finish removing the blob it brings
// back (one blob store delete).
const holdWait = 30 * time.Second

// hold pins blob h: pins+1 on its row, recorded with a new random generation if absent,
// and pinned_until at least now + the lease (a lease never shortens another node's). The
// pin is on that row's generation: its release drops a pin of that generation only, and
// the upload's reference (incref, flush) must find it. Found by review: the release was
// by hash alone, so an upload whose lease had run out, whose row gc had collected and
// which then failed, dropped the pin of a later upload of the same content on the row
// recorded anew, and gc collected the blob under that upload (TestPGStaleReleaseKeepsNewPin);
// and the reference of such an upload, once its blob store write came back, counted on
// the new row, whose blob was still being written (the one it had written was collected),
// and was acknowledged for content that never arrived (TestPGStaleHoldTakesNoNewRecord).
func (m *pgMeta) hold(ctx context.Context, h [32]byte, size int64) (blobPin, error) {
	deadline := time.Now().Add(holdWait)
	for {
		var gen int64
		var keyed bool
		err := m.pool.QueryRow(ctx, `INSERT INTO veil_blobs (hash, size, refs, pins, pinned_until, gen, keyed)
			VALUES ($1, $2, 0, 1, now() + $3 * INTERVAL '1 second', $4, TRUE)
			ON CONFLICT (hash) DO UPDATE SET pins = veil_blobs.pins + 1,
				pinned_until = CASE WHEN veil_blobs.pinned_until > EXCLUDED.pinned_until
					THEN veil_blobs.pinned_until ELSE EXCLUDED.pinned_until END
			WHERE NOT veil_blobs.deleting
			RETURNING gen, keyed`, h[:], size, int64(m.lease/time.Second)+1, newBlobGen()).Scan(&gen, &keyed)
		if err == nil {
			return blobPin{gen: gen, key: rowKey(gen, keyed), release: func() {
				ctx, cancel := context.WithTimeout(context.Background(), pgTimeout)
				defer cancel()
				// A release lost with the database leaves the pin to its lease.
				m.pool.Exec(ctx, `UPDATE veil_blobs SET pins = pins - 1 WHERE hash = $1 AND gen = $2 AND pins > 0`, h[:], gen)
			}}, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return blobPin{}, pgFault(err)
		}
		// gc is removing the blob: wait until it is gone, then record it again.
		if time.Now().After(deadline) {
			return blobPin{}, fmt.Errorf("%w: blob %x is being collected", storewire.ErrUnavailable, h[:8])
		}
		select {
		case <-ctx.Done():
			return blobPin{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rowKey is the key (blobID.key) of the copy in the blob store of a row of generation gen:
// the generation for a row recorded with schema version 3 or later (keyed), else 0 (the
// copy is named by its hash alone, as before).
func rowKey(gen int64, keyed bool) int64 {
	if keyed {
		return gen
	}
	return 0
}

// newBlobGen is the generation of a blob row hold records: random, so that rows recorded
// by any node for the same content differ (no sequence needed), and not 0, the generation
// of rows recorded before there were generations (pgMigrations) and of inline content.
func newBlobGen() int64 { return rand.Int64N(math.MaxInt64) + 1 }

// readHold does nothing: gc removes only blobs without references, and a read that loses
// a race with a delete and a gc of the same name fails as the content being gone.
func (m *pgMeta) readHold() func() { return func() {} }

func (m *pgMeta) shared() bool { return true }

// ping pings on a pooled connection. A pool whose connections are all in use (a busy node)
// is not an unreachable database: a ping that timed out waiting for one then counts as
// answered, so readiness does not take a loaded node out of rotation (a database that is
// down fails the requests holding connections, which are then given back).
func (m *pgMeta) ping(ctx context.Context) error {
	err := m.pool.Ping(ctx)
	if st := m.pool.Stat(); err != nil && ctx.Err() != nil && st.AcquiredConns() >= st.MaxConns() {
		return nil
	}
	return err
}

func (m *pgMeta) close() error {
	m.commit.close()
	m.pool.Close()
	return nil
}
