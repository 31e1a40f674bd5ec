package storeserver

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pgCache makes a group of puts cost about one query each: within a write transaction,
// every row read is kept (the user row locks keep them current), and writes are held and
// sent in one pipelined batch (pgx.Batch) when the transaction ends, or before a query
// over many rows (children, below, a move) that must see them.
type pgCache struct {
	ents  map[entKey]*pgEnt
	dirs  map[dirKey]*pgDir
	accts map[string]*pgAcct
	order []any // dirty keys in the order first written
}

type entKey struct{ user, dir, name string }
type dirKey struct{ user, dir string }

type pgEnt struct {
	e      entry
	ok     bool
	dirty  bool
	stored int8 // whether the database holds the row: storedUnknown, storedNo, storedYes
}

const (
	storedUnknown int8 = iota
	storedNo
	storedYes
)

type pgDir struct {
	n     int64
	dirty bool
}

type pgAcct struct {
	u     userRec
	meta  int64
	ok    bool
	dirty bool
}

func (c *pgCache) ent(k entKey, e entry, ok, dirty bool) {
	if c.ents == nil {
		c.ents = map[entKey]*pgEnt{}
	}
	old := c.ents[k]
	if dirty && (old == nil || !old.dirty) {
		c.order = append(c.order, k)
	}
	n := &pgEnt{e: e, ok: ok, dirty: dirty || old != nil && old.dirty}
	switch {
	case !dirty && ok: // read from the database
		n.stored = storedYes
	case !dirty:
		n.stored = storedNo
	case old != nil:
		n.stored = old.stored
	}
	c.ents[k] = n
}

func (c *pgCache) dir(k dirKey, n int64, dirty bool) {
	if c.dirs == nil {
		c.dirs = map[dirKey]*pgDir{}
	}
	old := c.dirs[k]
	if dirty && (old == nil || !old.dirty) {
		c.order = append(c.order, k)
	}
	c.dirs[k] = &pgDir{n: n, dirty: dirty || old != nil && old.dirty}
}

func (c *pgCache) acct(user string, a *pgAcct) {
	if c.accts == nil {
		c.accts = map[string]*pgAcct{}
	}
	c.accts[user] = a
}

// forget drops every cached row (after a statement that changed many).
func (c *pgCache) forget() { *c = pgCache{} }

// sqlCommit ends a write transaction, sent with its last writes (flush); as the check of
// a queued statement, it asks for the answer to be a commit.
const sqlCommit = `COMMIT`

// pgBatch queues statements and sends them in one round trip.
type pgBatch struct {
	b     pgx.Batch
	check []string // per queued statement: "" or the error when it changes no row
}

func (b *pgBatch) queue(sql string, args ...any) { b.queueCheck("", sql, args...) }

func (b *pgBatch) queueCheck(noRow, sql string, args ...any) {
	b.b.Queue(sql, args...)
	b.check = append(b.check, noRow)
}

func (t *pgTx) send(b *pgBatch) error {
	if b.b.Len() == 0 {
		return nil
	}
	br := t.q.SendBatch(t.ctx, &b.b)
	for _, noRow := range b.check {
		tag, err := br.Exec()
		switch {
		case err != nil && noRow != "" && noRow != sqlCommit && isDivisionByZero(err):
			err = fmt.Errorf("%w: %s", errRecord, noRow) // the check's own failure (flush)
		case err != nil:
		case noRow == sqlCommit && tag.String() != "COMMIT":
			err = fmt.Errorf("metadata: the transaction was rolled back (%s)", tag)
		case noRow != "" && noRow != sqlCommit && tag.RowsAffected() != 1:
			err = fmt.Errorf("%w: %s", errRecord, noRow)
		}
		if err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// begin locks the group's users' rows in name order and reads, in the same round trip,
// the names the members will look up and the counts of the directories those names are
// in, caching them present or absent (the user row locks keep both true until commit).
func (t *pgTx) begin(users []string, group []*commitReq) error {
	for _, u := range users {
		t.cache.acct(u, &pgAcct{}) // absent unless a row says otherwise
	}
	var b pgx.Batch
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	if len(users) > 0 {
		b.Queue(`SELECT `+userCols+`, meta, name FROM veil_users WHERE name = ANY($1) ORDER BY name FOR UPDATE`, users).Query(t.scanAccts)
		t.queueLookups(&b, group)
	}
	return t.q.SendBatch(t.ctx, &b).Close()
}

// join reads what the members that joined the group after its users were locked will
// look up (those not cached yet).
func (t *pgTx) join(late []*commitReq) error {
	var b pgx.Batch
	t.queueLookups(&b, late)
	if b.Len() == 0 {
		return nil
	}
	return t.q.SendBatch(t.ctx, &b).Close()
}

// queueLookups queues the reads of the names group's members will look up and of the
// counts of the directories they are in, those not cached yet, and caches them as absent
// until a row says otherwise.
func (t *pgTx) queueLookups(b *pgx.Batch, group []*commitReq) {
	var ents, dirs keyCols
	for _, r := range group {
		if r.user == "" {
			continue
		}
		for _, n := range r.names {
			if k := (entKey{r.user, n[0], n[1]}); t.cache.ents[k] == nil {
				ents.add(k.user, k.dir, k.name)
				t.cache.ent(k, entry{}, false, false)
			}
			if k := (dirKey{r.user, n[0]}); t.cache.dirs[k] == nil {
				dirs.add(k.user, k.dir, "")
				t.cache.dir(k, 0, false)
			}
		}
	}
	if len(ents.owner) > 0 {
		b.Queue(sqlEntGet, ents.owner, ents.dir, ents.name).Query(t.scanEnts)
	}
	if len(dirs.owner) > 0 {
		b.Queue(sqlDirGet, dirs.owner, dirs.dir).Query(t.scanDirs)
	}
}

func (t *pgTx) scanAccts(rows pgx.Rows) error {
	for rows.Next() {
		var a pgAcct
		var name string
		var err error
		if a.u, err = scanUser(rows, &a.meta, &name); err != nil {
			return err
		}
		a.ok = true
		t.cache.acct(name, &a)
	}
	return rows.Err()
}

func (t *pgTx) scanEnts(rows pgx.Rows) error {
	for rows.Next() {
		var owner string
		var dir, name, h []byte
		var kind int16
		var e entry
		if err := rows.Scan(&owner, &dir, &name, &kind, &e.size, &e.modTime, &h); err != nil {
			return err
		}
		e.kind = byte(kind)
		copy(e.hash[:], h)
		t.cache.ent(entKey{owner, string(dir), string(name)}, e, true, false)
	}
	return rows.Err()
}

func (t *pgTx) scanDirs(rows pgx.Rows) error {
	for rows.Next() {
		var owner string
		var dir []byte
		var n int64
		if err := rows.Scan(&owner, &dir, &n); err != nil {
			return err
		}
		t.cache.dir(dirKey{owner, string(dir)}, n, false)
	}
	return rows.Err()
}

// isDivisionByZero reports a check statement's failure (SQLSTATE 22012), the way flush's
// checks fail in the database.
func isDivisionByZero(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}
