package storeserver

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
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
	e     entry
	ok    bool
	dirty bool
}

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
	c.ents[k] = &pgEnt{e: e, ok: ok, dirty: dirty || old != nil && old.dirty}
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
		if err == nil && noRow != "" && tag.RowsAffected() != 1 {
			err = fmt.Errorf("%w: %s", errRecord, noRow)
		}
		if err != nil {
			br.Close()
			return err
		}
	}
	return br.Close()
}

// queueWrites queues the held row writes and marks them clean: one multi-row statement
// per kind of write (names stored, names deleted, counts stored, counts deleted), since
// a statement costs the database more than a row.
func (t *pgTx) queueWrites(b *pgBatch) {
	c := &t.cache
	var putE, delE, putD, delD multiRow
	for _, k := range c.order {
		switch k := k.(type) {
		case entKey:
			if e := c.ents[k]; e != nil && e.dirty {
				if e.ok {
					var h []byte
					if e.e.kind == kindFile {
						h = e.e.hash[:]
					}
					putE.row(k.user, []byte(k.dir), []byte(k.name), int16(e.e.kind), e.e.size, e.e.modTime, h)
				} else {
					delE.row(k.user, []byte(k.dir), []byte(k.name))
				}
				e.dirty = false
			}
		case dirKey:
			if d := c.dirs[k]; d != nil && d.dirty {
				if d.n > 0 {
					putD.row(k.user, []byte(k.dir), d.n)
				} else {
					delD.row(k.user, []byte(k.dir))
				}
				d.dirty = false
			}
		}
	}
	putE.queue(b, `INSERT INTO veil_entries (owner, dir, name, kind, size, mtime, hash) VALUES `,
		` ON CONFLICT (owner, dir, name) DO UPDATE SET kind = EXCLUDED.kind, size = EXCLUDED.size, mtime = EXCLUDED.mtime, hash = EXCLUDED.hash`)
	delE.queue(b, `DELETE FROM veil_entries WHERE (owner, dir, name) IN (`, `)`)
	putD.queue(b, `INSERT INTO veil_dirs (owner, dir, entries) VALUES `, ` ON CONFLICT (owner, dir) DO UPDATE SET entries = EXCLUDED.entries`)
	delD.queue(b, `DELETE FROM veil_dirs WHERE (owner, dir) IN (`, `)`)
	c.order = c.order[:0]
	users := make([]string, 0, len(c.accts))
	for u, a := range c.accts {
		if a.dirty {
			users = append(users, u)
		}
	}
	sort.Strings(users)
	for _, u := range users {
		a := c.accts[u]
		b.queue(`UPDATE veil_users SET used = $2, meta = $3 WHERE name = $1`, u, a.u.used, a.meta)
		a.dirty = false
	}
}

// writeBack sends the held row writes (not the reference counts, which wait for flush).
func (t *pgTx) writeBack() error {
	if t.readOnly {
		return nil
	}
	var b pgBatch
	t.queueWrites(&b)
	return t.send(&b)
}

// flush sends the held row writes and the gathered reference count changes, one statement
// per blob in hash order (so that transactions sharing blobs lock them in one order): new inline content is inserted with its record; a blob in the blob store was
// recorded by hold, and a record marked deleting (gc is removing it) takes no reference.
func (t *pgTx) flush() error {
	var b pgBatch
	t.queueWrites(&b)
	hs := make([][32]byte, 0, len(t.deltas))
	for h := range t.deltas {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return bytes.Compare(hs[i][:], hs[j][:]) < 0 })
	for _, h := range hs {
		d := t.deltas[h]
		switch {
		case d.refs == 0:
		case d.inline != nil && d.refs > 0:
			b.queue(`INSERT INTO veil_blobs (hash, size, refs, data) VALUES ($1, $2, $3, $4)
				ON CONFLICT (hash) DO UPDATE SET refs = veil_blobs.refs + EXCLUDED.refs`, h[:], d.size, d.refs, d.inline)
		default:
			b.queueCheck(fmt.Sprintf("no record of blob %x (collected before its reference committed?)", h[:8]),
				`UPDATE veil_blobs SET refs = GREATEST(refs + $2, 0) WHERE hash = $1 AND NOT deleting`, h[:], d.refs)
		}
	}
	return t.send(&b)
}

// multiRow builds statements over many rows: "($1, $2), ($3, $4)", a new statement
// every maxParams parameters (PostgreSQL takes at most 65,535 per statement).
type multiRow struct {
	sb   strings.Builder
	args []any
	done []multiPart
}

type multiPart struct {
	rows string
	args []any
}

const maxParams = 30000

func (m *multiRow) row(vals ...any) {
	if len(m.args)+len(vals) > maxParams {
		m.done = append(m.done, multiPart{m.sb.String(), m.args})
		m.sb.Reset()
		m.args = nil
	}
	if len(m.args) > 0 {
		m.sb.WriteString(", ")
	}
	m.sb.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			m.sb.WriteString(", ")
		}
		m.args = append(m.args, v)
		fmt.Fprintf(&m.sb, "$%d", len(m.args))
	}
	m.sb.WriteByte(')')
}

func (m *multiRow) queue(b *pgBatch, head, tail string) {
	for _, p := range m.parts() {
		b.queue(head+p.rows+tail, p.args...)
	}
}

func (m *multiRow) parts() []multiPart {
	if len(m.args) == 0 {
		return m.done
	}
	return append(m.done, multiPart{m.sb.String(), m.args})
}

// prefetch reads the names the group's members will look up, 1,000 per statement (a
// statement takes at most 65,535 parameters), and caches them, present or absent (the
// user row locks keep both true until commit).
func (t *pgTx) prefetch(group []*commitReq) error {
	want := map[entKey]bool{}
	var keys []entKey
	for _, r := range group {
		for _, n := range r.names {
			k := entKey{r.user, n[0], n[1]}
			if r.user != "" && !want[k] {
				want[k] = true
				keys = append(keys, k)
			}
		}
	}
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), 1000)]
		keys = keys[len(chunk):]
		if err := t.prefetchChunk(chunk, want); err != nil {
			return err
		}
	}
	for k, absent := range want {
		if absent {
			t.cache.ent(k, entry{}, false, false)
		}
	}
	return nil
}

// prefetchChunk reads keys into the cache and marks the ones found in want (false).
func (t *pgTx) prefetchChunk(keys []entKey, want map[entKey]bool) error {
	var q multiRow
	for _, k := range keys {
		q.row(k.user, []byte(k.dir), []byte(k.name))
	}
	p := q.parts()[0] // 1,000 keys: one part
	rows, err := t.q.Query(t.ctx, `SELECT owner, dir, name, kind, size, mtime, hash FROM veil_entries WHERE (owner, dir, name) IN (`+p.rows+`)`, p.args...)
	if err != nil {
		return err
	}
	defer rows.Close()
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
		k := entKey{owner, string(dir), string(name)}
		t.cache.ent(k, e, true, false)
		want[k] = false
	}
	return rows.Err()
}
