package storeserver

import (
	"bytes"
	"fmt"
	"sort"
)

// The statements below take their rows as column arrays (unnest($1::text[], ...)): one
// statement text whatever the number of rows, so each connection prepares it once and
// PostgreSQL plans it once, and a lookup of many keys is a join (an index probe per key)
// rather than a list of OR-ed row comparisons that the database re-checks for every row
// it finds (that recheck was quadratic in the group size: half of PostgreSQL's CPU per
// put under 32 clients). Arrays take any number of rows, so no statement is split.
// Lookups are a LATERAL subquery with LIMIT 1 per key, which the planner cannot turn into
// a join: one primary key probe per key whatever the table statistics say (a hash join
// would scan the whole table, and a generic plan made while the table was small would).
const (
	sqlEntPut = `INSERT INTO veil_entries (owner, dir, name, kind, size, mtime, hash)
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::smallint[], $5::bigint[], $6::bigint[], $7::bytea[])
		ON CONFLICT (owner, dir, name) DO UPDATE SET kind = EXCLUDED.kind, size = EXCLUDED.size, mtime = EXCLUDED.mtime, hash = EXCLUDED.hash`
	// Names read absent under the user lock: a plain insert (no conflict check).
	sqlEntNew = `INSERT INTO veil_entries (owner, dir, name, kind, size, mtime, hash)
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[], $4::smallint[], $5::bigint[], $6::bigint[], $7::bytea[])`
	sqlEntDel = `DELETE FROM veil_entries WHERE (owner, dir, name) IN
		(SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[]))`
	sqlEntGet = `SELECT e.owner, e.dir, e.name, e.kind, e.size, e.mtime, e.hash
		FROM unnest($1::text[], $2::bytea[], $3::bytea[]) AS k(owner, dir, name) CROSS JOIN LATERAL
		(SELECT * FROM veil_entries WHERE owner = k.owner AND dir = k.dir AND name = k.name LIMIT 1) AS e`
	sqlDirPut = `INSERT INTO veil_dirs (owner, dir, entries) SELECT * FROM unnest($1::text[], $2::bytea[], $3::bigint[])
		ON CONFLICT (owner, dir) DO UPDATE SET entries = EXCLUDED.entries`
	sqlDirDel = `DELETE FROM veil_dirs WHERE (owner, dir) IN (SELECT * FROM unnest($1::text[], $2::bytea[]))`
	sqlDirGet = `SELECT d.owner, d.dir, d.entries FROM unnest($1::text[], $2::bytea[]) AS k(owner, dir) CROSS JOIN LATERAL
		(SELECT * FROM veil_dirs WHERE owner = k.owner AND dir = k.dir LIMIT 1) AS d`
	// New inline content, in the arrays' order (hash order: rows are inserted, and
	// existing ones locked, in the order unnest yields them).
	sqlBlobAdd = `INSERT INTO veil_blobs (hash, size, refs, data)
		SELECT hash, size, refs, data FROM unnest($1::bytea[], $2::bigint[], $3::bigint[], $4::bytea[]) WITH ORDINALITY AS d(hash, size, refs, data, i) ORDER BY i
		ON CONFLICT (hash) DO UPDATE SET refs = veil_blobs.refs + EXCLUDED.refs`
)

// keyCols are the columns (owner, dir, name) of entry keys; dir alone for directory counts.
type keyCols struct {
	owner     []string
	dir, name [][]byte
}

func (c *keyCols) add(owner, dir, name string) {
	c.owner = append(c.owner, owner)
	c.dir = append(c.dir, []byte(dir))
	c.name = append(c.name, []byte(name))
}

// entCols are entry rows.
type entCols struct {
	keyCols
	kind        []int16
	size, mtime []int64
	hash        [][]byte
}

func (c *entCols) row(k entKey, e entry, h []byte) {
	c.add(k.user, k.dir, k.name)
	c.kind = append(c.kind, int16(e.kind))
	c.size = append(c.size, e.size)
	c.mtime = append(c.mtime, e.modTime)
	c.hash = append(c.hash, h)
}

// queueWrites queues the held row writes and marks them clean: one statement per kind of
// write (new names, names stored, names deleted, counts stored, counts deleted), then one per
// changed account.
func (t *pgTx) queueWrites(b *pgBatch) {
	c := &t.cache
	var putE, newE entCols
	var delE, delD keyCols
	var putD keyCols
	var putN []int64
	for _, k := range c.order {
		switch k := k.(type) {
		case entKey:
			if e := c.ents[k]; e != nil && e.dirty {
				if e.ok {
					var h []byte
					if e.e.kind == kindFile {
						h = e.e.hash[:]
					}
					if e.stored == storedNo {
						newE.row(k, e.e, h)
					} else {
						putE.row(k, e.e, h)
					}
					e.stored = storedYes
				} else {
					delE.add(k.user, k.dir, k.name)
					e.stored = storedNo
				}
				e.dirty = false
			}
		case dirKey:
			if d := c.dirs[k]; d != nil && d.dirty {
				if d.n > 0 {
					putD.add(k.user, k.dir, "")
					putN = append(putN, d.n)
				} else {
					delD.add(k.user, k.dir, "")
				}
				d.dirty = false
			}
		}
	}
	if len(newE.owner) > 0 {
		b.queue(sqlEntNew, newE.owner, newE.dir, newE.name, newE.kind, newE.size, newE.mtime, newE.hash)
	}
	if len(putE.owner) > 0 {
		b.queue(sqlEntPut, putE.owner, putE.dir, putE.name, putE.kind, putE.size, putE.mtime, putE.hash)
	}
	if len(delE.owner) > 0 {
		b.queue(sqlEntDel, delE.owner, delE.dir, delE.name)
	}
	if len(putD.owner) > 0 {
		b.queue(sqlDirPut, putD.owner, putD.dir, putN)
	}
	if len(delD.owner) > 0 {
		b.queue(sqlDirDel, delD.owner, delD.dir)
	}
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

// flush sends the held row writes, the gathered reference count changes and the commit
// in one round trip; reference counts change in hash order
// (so that transactions sharing blobs lock them in one order): new inline content is
// inserted with its record (a run of them in hash order is one statement); a blob in the
// blob store was recorded by hold, and a record marked deleting (gc is removing it), or
// of another generation than the one a reference's upload pinned (gc collected that one
// and another upload recorded the content anew), takes no reference (one statement each).
func (t *pgTx) flush() error {
	var b pgBatch
	t.queueWrites(&b)
	hs := make([][32]byte, 0, len(t.deltas))
	for h := range t.deltas {
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool { return bytes.Compare(hs[i][:], hs[j][:]) < 0 })
	var run blobCols
	for _, h := range hs {
		d := t.deltas[h]
		switch {
		case d.refs == 0:
		case d.inline != nil && d.refs > 0:
			run.add(h, d)
		default:
			run.queue(&b)
			// The check fails in the database (division by zero when no row changed), not
			// only here: the batch's COMMIT must not commit a transaction whose check
			// failed (found by review: the names were committed, the caller told it had
			// failed, and its rerun then answered success for content gc would remove).
			// gen = ALL(gens): each pinned generation is the row's (true for none).
			gens := d.gens
			if gens == nil {
				gens = []int64{} // NULL would fail the check
			}
			b.queueCheck(fmt.Sprintf("no record of blob %x as pinned (collected before its reference committed?)", h[:8]),
				`WITH u AS (UPDATE veil_blobs SET refs = GREATEST(refs + $2, 0)
					WHERE hash = $1 AND NOT deleting AND gen = ALL($3::bigint[]) RETURNING 1)
				SELECT 1 / (SELECT count(*) FROM u)::int`, h[:], d.refs, gens)
		}
	}
	run.queue(&b)
	t.queueCharged(&b)
	b.queueCheck(sqlCommit, sqlCommit)
	return t.send(&b)
}

// blobCols is a run of new inline content records, in hash order.
type blobCols struct {
	hash, data [][]byte
	size, refs []int64
}

func (c *blobCols) add(h [32]byte, d *blobDelta) {
	c.hash = append(c.hash, bytes.Clone(h[:]))
	c.size = append(c.size, d.size)
	c.refs = append(c.refs, d.refs)
	c.data = append(c.data, d.inline)
}

// queue queues the run as one statement and empties it.
func (c *blobCols) queue(b *pgBatch) {
	if len(c.hash) > 0 {
		b.queue(sqlBlobAdd, c.hash, c.size, c.refs, c.data)
	}
	*c = blobCols{}
}
