package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/veil-project/veil/internal/storage"
)

// pgTx is a metaTx over a PostgreSQL transaction. Directory and entry names are BYTEA so
// that order is byte order on every PostgreSQL-compatible database, whatever its collation.
// Reference count changes are gathered and written by flush, in hash order.
type pgTx struct {
	ctx      context.Context
	q        pgQuerier
	readOnly bool
	deltas   map[[32]byte]*blobDelta
	cache    pgCache              // reads cached, writes held until the next query that needs them (meta_pg_cache.go)
	commits  []func()             // onCommit's, run by exec once the transaction has committed
	resv     map[string][]resvRow // users' live quota reservations, read once (meta_pg_quota.go)
	charged  map[string][]int64   // the reservations this transaction charges, by user
}

func (t *pgTx) onCommit(fn func()) { t.commits = append(t.commits, fn) }

// pgQuerier runs statements: a read-only transaction (view), or the connection of a write
// transaction that the group commit begins and commits itself (meta_pg.go).
type pgQuerier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type blobDelta struct {
	refs   int64
	size   int64
	inline []byte  // the content, when it is kept in the database and this tx adds it
	gens   []int64 // the generations the references added to content in the blob store were pinned on
}

var errReadOnly = errors.New("metadata: write in a read-only transaction")

// belowSQL selects dir itself or any directory under it ($2 dir, $3 dir+"/", $4 dir+"0":
// '0' follows '/', so [dir/, dir0) is exactly the paths under dir).
const belowSQL = `(dir = $2 OR (dir >= $3 AND dir < $4))`

func belowArgs(dir string) []any {
	return []any{[]byte(dir), []byte(dir + "/"), []byte(dir + "0")}
}

func (t *pgTx) entry(user, dir, name string) (entry, bool, error) {
	k := entKey{user, dir, name}
	if c, ok := t.cache.ents[k]; ok {
		return c.e, c.ok, nil
	}
	e, ok, err := t.readEntry(user, dir, name)
	if err == nil {
		t.cache.ent(k, e, ok, false)
	}
	return e, ok, err
}

func (t *pgTx) readEntry(user, dir, name string) (entry, bool, error) {
	var e entry
	var h []byte
	var kind int16
	err := t.q.QueryRow(t.ctx, `SELECT kind, size, mtime, hash FROM veil_entries WHERE owner = $1 AND dir = $2 AND name = $3`,
		user, []byte(dir), []byte(name)).Scan(&kind, &e.size, &e.modTime, &h)
	e.kind = byte(kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return entry{}, false, nil
	}
	if err != nil {
		return entry{}, false, err
	}
	copy(e.hash[:], h)
	return e, true, nil
}

func (t *pgTx) putEntry(user, dir, name string, e entry) error {
	if t.readOnly {
		return errReadOnly
	}
	t.cache.ent(entKey{user, dir, name}, e, true, true)
	return nil
}

func (t *pgTx) deleteEntry(user, dir, name string) error {
	if t.readOnly {
		return errReadOnly
	}
	t.cache.ent(entKey{user, dir, name}, entry{}, false, true)
	return nil
}

// scanEntries reads all rows (dir, name, kind, size, mtime, hash) before calling fn, so fn
// may run statements of its own.
func (t *pgTx) scanEntries(rows pgx.Rows, err error, fn func(dir, name string, e entry) error) error {
	if err != nil {
		return err
	}
	type row struct {
		dir, name []byte
		e         entry
	}
	var all []row
	for rows.Next() {
		var r row
		var h []byte
		var kind int16
		if err := rows.Scan(&r.dir, &r.name, &kind, &r.e.size, &r.e.modTime, &h); err != nil {
			rows.Close()
			return err
		}
		r.e.kind = byte(kind)
		copy(r.e.hash[:], h)
		all = append(all, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range all {
		if err := fn(string(r.dir), string(r.name), r.e); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) children(user, dir string, fn func(string, entry) error) error {
	if err := t.writeBack(); err != nil {
		return err
	}
	rows, err := t.q.Query(t.ctx, `SELECT dir, name, kind, size, mtime, hash FROM veil_entries WHERE owner = $1 AND dir = $2 ORDER BY name`,
		user, []byte(dir))
	return t.scanEntries(rows, err, func(_, name string, e entry) error { return fn(name, e) })
}

func (t *pgTx) below(user, dir, name string, fn func(string, string, entry) error) error {
	q := `SELECT dir, name, kind, size, mtime, hash FROM veil_entries WHERE owner = $1`
	args := []any{user}
	if dir != "" {
		q += ` AND ` + belowSQL
		args = append(args, belowArgs(dir)...)
	}
	if name != "" {
		q += fmt.Sprintf(` AND name = $%d`, len(args)+1)
		args = append(args, []byte(name))
	}
	if err := t.writeBack(); err != nil {
		return err
	}
	rows, err := t.q.Query(t.ctx, q+` ORDER BY dir, name`, args...)
	return t.scanEntries(rows, err, fn)
}

func (t *pgTx) moveBelow(user, src, dst string) error {
	return t.moveDirs("veil_entries", user, src, dst)
}

// moveDirs renames, in table (veil_entries or veil_dirs), user's directory src and the
// directories below it to dst, after writing the cached changes back.
func (t *pgTx) moveDirs(table, user, src, dst string) error {
	if err := t.writeBack(); err != nil {
		return err
	}
	t.cache.forget()
	_, err := t.q.Exec(t.ctx, `UPDATE `+table+` SET dir = $5 || substring(dir FROM $6) WHERE owner = $1 AND `+belowSQL,
		append(append([]any{user}, belowArgs(src)...), []byte(dst), len(src)+1)...)
	return err
}

func (t *pgTx) dirCount(user, dir string) (int64, error) {
	k := dirKey{user, dir}
	if c, ok := t.cache.dirs[k]; ok {
		return c.n, nil
	}
	var n int64
	err := t.q.QueryRow(t.ctx, `SELECT entries FROM veil_dirs WHERE owner = $1 AND dir = $2`, user, []byte(dir)).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		n, err = 0, nil
	}
	if err == nil {
		t.cache.dir(k, n, false)
	}
	return n, err
}

func (t *pgTx) setDirCount(user, dir string, n int64) error {
	if t.readOnly {
		return errReadOnly
	}
	t.cache.dir(dirKey{user, dir}, max(n, 0), true)
	return nil
}

func (t *pgTx) moveDirCounts(user, src, dst string) error {
	return t.moveDirs("veil_dirs", user, src, dst)
}

func (t *pgTx) dirCounts(user string, fn func(string, int64) error) error {
	if err := t.writeBack(); err != nil {
		return err
	}
	rows, err := t.q.Query(t.ctx, `SELECT dir, entries FROM veil_dirs WHERE owner = $1`, user)
	if err != nil {
		return err
	}
	type row struct {
		dir []byte
		n   int64
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.dir, &x.n)
	})
	if err != nil {
		return err
	}
	for _, r := range all {
		if err := fn(string(r.dir), r.n); err != nil {
			return err
		}
	}
	return nil
}

const userCols = `admin, secret_hash, quota, used, created`

func scanUser(row pgx.Row, extra ...any) (userRec, error) {
	var u userRec
	var sh []byte
	err := row.Scan(append([]any{&u.admin, &sh, &u.quota, &u.used, &u.created}, extra...)...)
	if err == nil && len(sh) != len(u.secretHash) {
		err = fmt.Errorf("%w: user secret hash of %d bytes", errRecord, len(sh))
	}
	copy(u.secretHash[:], sh)
	return u, err
}

func (t *pgTx) account(user string) (userRec, int64, bool, error) {
	if a, ok := t.cache.accts[user]; ok {
		return a.u, a.meta, a.ok, nil
	}
	var meta int64
	u, err := scanUser(t.q.QueryRow(t.ctx, `SELECT `+userCols+`, meta FROM veil_users WHERE name = $1`, user), &meta)
	if errors.Is(err, pgx.ErrNoRows) {
		t.cache.acct(user, &pgAcct{})
		return userRec{}, 0, false, nil
	}
	if err == nil {
		t.cache.acct(user, &pgAcct{u: u, meta: meta, ok: true})
	}
	return u, meta, err == nil, err
}

func (t *pgTx) setUsed(user string, u userRec) error {
	a, err := t.dirtyAcct(user)
	if err == nil {
		a.u.used = u.used
	}
	return err
}

// setQuota writes the quota at once (the write-back of a dirty account sets only used
// and meta); the transaction holds the user's row lock.
func (t *pgTx) setQuota(user string, quota int64) error {
	if t.readOnly {
		return errReadOnly
	}
	tag, err := t.q.Exec(t.ctx, `UPDATE veil_users SET quota = $2 WHERE name = $1`, user, quota)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("user %q: %w", user, storage.ErrNotFound)
	}
	if a, ok := t.cache.accts[user]; err == nil && ok && a.ok {
		a.u.quota = quota
	}
	return err
}

func (t *pgTx) setMeta(user string, meta int64) error {
	a, err := t.dirtyAcct(user)
	if err == nil {
		a.meta = meta
	}
	return err
}

func (t *pgTx) dirtyAcct(user string) (*pgAcct, error) {
	if t.readOnly {
		return nil, errReadOnly
	}
	if _, _, ok, err := t.account(user); err != nil || !ok {
		return nil, firstErr(err, fmt.Errorf("user %q: %w", user, storage.ErrPermission))
	}
	a := t.cache.accts[user]
	a.dirty = true
	return a, nil
}

func (t *pgTx) blob(h [32]byte) (blobRec, []byte, bool, error) {
	var r blobRec
	var data []byte
	err := t.q.QueryRow(t.ctx, `SELECT size, refs, data, CASE WHEN keyed THEN gen ELSE 0 END
		FROM veil_blobs WHERE hash = $1 AND NOT deleting`, h[:]).Scan(&r.size, &r.refs, &data, &r.key)
	if errors.Is(err, pgx.ErrNoRows) {
		return blobRec{}, nil, false, nil
	}
	if err != nil {
		return blobRec{}, nil, false, err
	}
	r.inline = data != nil
	return r, data, true, nil
}

func (t *pgTx) delta(h [32]byte) (*blobDelta, error) {
	if t.readOnly {
		return nil, errReadOnly
	}
	d := t.deltas[h]
	if d == nil {
		d = &blobDelta{}
		t.deltas[h] = d
	}
	return d, nil
}

func (t *pgTx) incref(h [32]byte, size int64, inline []byte, gen int64) error {
	d, err := t.delta(h)
	if err != nil {
		return err
	}
	d.refs++
	d.size = size
	if inline != nil {
		d.inline = inline
	} else if !slices.Contains(d.gens, gen) {
		d.gens = append(d.gens, gen)
	}
	return nil
}

func (t *pgTx) decref(h [32]byte) error {
	d, err := t.delta(h)
	if err != nil {
		return err
	}
	d.refs--
	return nil
}

func (t *pgTx) blobs(fn func([32]byte, blobRec) error) error {
	rows, err := t.q.Query(t.ctx, `SELECT hash, size, refs, data IS NOT NULL, CASE WHEN keyed THEN gen ELSE 0 END
		FROM veil_blobs WHERE NOT deleting`)
	if err != nil {
		return err
	}
	type row struct {
		h [32]byte
		r blobRec
	}
	all, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var x row
		var h []byte
		err := cr.Scan(&h, &x.r.size, &x.r.refs, &x.r.inline, &x.r.key)
		if err == nil && len(h) != 32 {
			err = fmt.Errorf("%w: blob key of %d bytes", errRecord, len(h))
		}
		copy(x.h[:], h)
		return x, err
	})
	if err != nil {
		return err
	}
	for _, x := range all {
		if err := fn(x.h, x.r); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) users(fn func(string, userRec) error) error {
	rows, err := t.q.Query(t.ctx, `SELECT `+userCols+`, name FROM veil_users`)
	if err != nil {
		return err
	}
	type row struct {
		name string
		u    userRec
	}
	all, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var name string
		u, err := scanUser(cr, &name)
		return row{name, u}, err
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b row) int { return bytes.Compare([]byte(a.name), []byte(b.name)) })
	for _, r := range all {
		if err := fn(r.name, r.u); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) createUser(name string, u userRec) error {
	if t.readOnly {
		return errReadOnly
	}
	tag, err := t.q.Exec(t.ctx, `INSERT INTO veil_users (name, `+userCols+`, meta) VALUES ($1, $2, $3, $4, $5, $6, 0)
		ON CONFLICT (name) DO NOTHING`, name, u.admin, u.secretHash[:], u.quota, u.used, u.created)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("user %q: %w", name, storage.ErrExists)
	}
	return err
}

func (t *pgTx) dropUser(name string) error {
	if err := t.writeBack(); err != nil {
		return err
	}
	t.cache.forget()
	for _, q := range []string{`DELETE FROM veil_entries WHERE owner = $1`, `DELETE FROM veil_dirs WHERE owner = $1`, `DELETE FROM veil_users WHERE name = $1`} {
		if _, err := t.q.Exec(t.ctx, q, name); err != nil {
			return err
		}
	}
	return nil
}
