package storeserver

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
)

// boltMeta keeps the metadata in meta.db (bbolt; docs/formats/store-records.md). bbolt's
// file lock makes this process the only writer; gc and uploads are coordinated by gcMu.
type boltMeta struct {
	db     *bolt.DB
	commit *committer
	// gcMu is held shared by an upload while it makes its blob durable and references it
	// (and by a read between lookup and open), exclusively by gc while it sweeps, so gc
	// never removes a blob being referenced or read.
	gcMu sync.RWMutex
	pins blobPins // uploads holding each blob (discard)
}

func newBoltMeta(db *bolt.DB, groups func(int)) *boltMeta {
	m := &boltMeta{db: db, pins: blobPins{n: map[[32]byte]int{}, key: map[[32]byte]int64{}, removing: map[[32]byte]chan struct{}{}}}
	m.commit = newCommitter(func(group []*commitReq) error {
		return db.Update(func(tx *bolt.Tx) error {
			for _, r := range group {
				if err := r.fn(boltTx{tx}); err != nil {
					return err
				}
			}
			return nil
		})
	}, groups)
	return m
}

func (m *boltMeta) update(_ context.Context, user string, fn func(metaTx) error) error {
	return m.commit.do(user, fn)
}

func (m *boltMeta) updateNames(ctx context.Context, user string, _ [][2]string, fn func(metaTx) error) error {
	return m.update(ctx, user, fn) // reads from the memory map cost nothing to prefetch
}

func (m *boltMeta) view(_ context.Context, fn func(metaTx) error) error {
	return m.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (m *boltMeta) hold(ctx context.Context, h [32]byte, _ int64) (blobPin, error) {
	if err := m.pins.add(ctx, h); err != nil { // before gcMu: a removal does not wait for gc
		return blobPin{}, err
	}
	m.gcMu.RLock()
	key, err := m.pins.keyOf(h, func() (int64, error) {
		var key int64
		err := m.view(ctx, func(t metaTx) error {
			r, _, ok, err := t.blob(h)
			if !ok {
				r.key = newBlobGen()
			}
			key = r.key
			return err
		})
		return key, err
	})
	if err != nil {
		m.pins.drop(h)
		m.gcMu.RUnlock()
		return blobPin{}, err
	}
	return blobPin{gen: key, key: key, release: func() {
		m.pins.drop(h)
		m.gcMu.RUnlock()
	}}, nil
}

// reserve records nothing: this process holds every reservation (quota.go).
func (m *boltMeta) reserve(context.Context, string, int64) (int64, error) { return 0, nil }

func (m *boltMeta) unreserve(string, int64) {}

func (boltTx) reserved(string) (int64, error) { return 0, nil }

func (boltTx) chargeReservation(string, int64) {}

func (m *boltMeta) readHold() func() {
	m.gcMu.RLock()
	return m.gcMu.RUnlock
}

func (m *boltMeta) shared() bool { return false }

// ping reads the database version: an error once the database is closed (or of a
// version this process does not read).
func (m *boltMeta) ping(context.Context) error {
	return m.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta)
		if b == nil {
			return fmt.Errorf("%w: missing buckets", errRecord)
		}
		_, err := parseDBVersion(b.Get(versionKey))
		return err
	})
}

func (m *boltMeta) close() error {
	m.commit.close()
	return m.db.Close()
}

// boltTx is a metaTx over a bbolt transaction.
type boltTx struct{ tx *bolt.Tx }

func (t boltTx) onCommit(fn func()) { t.tx.OnCommit(fn) }

func (t boltTx) ns(user string) (*bolt.Bucket, error) {
	b := t.tx.Bucket(bucketNS).Bucket([]byte(user))
	if b == nil {
		return nil, fmt.Errorf("user %q: %w", user, storage.ErrPermission)
	}
	return b, nil
}

func (t boltTx) entry(user, dir, name string) (entry, bool, error) {
	b, err := t.ns(user)
	if err != nil {
		return entry{}, false, err
	}
	v := b.Get(nsKey(dir, name))
	if v == nil {
		return entry{}, false, nil
	}
	e, err := parseEntry(v)
	return e, err == nil, err
}

func (t boltTx) putEntry(user, dir, name string, e entry) error {
	b, err := t.ns(user)
	if err != nil {
		return err
	}
	return b.Put(nsKey(dir, name), e.marshal())
}

func (t boltTx) deleteEntry(user, dir, name string) error {
	b, err := t.ns(user)
	if err != nil {
		return err
	}
	return b.Delete(nsKey(dir, name))
}

func (t boltTx) children(user, dir string, fn func(string, entry) error) error {
	b, err := t.ns(user)
	if err != nil {
		return err
	}
	prefix := nsKey(dir, "")
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		e, err := parseEntry(v)
		if err != nil {
			return err
		}
		if err := fn(string(k[len(prefix):]), e); err != nil {
			return err
		}
	}
	return nil
}

// belowPrefixes are the key prefixes of everything in dir or under it.
func belowPrefixes(dir string) [][]byte {
	if dir == "" {
		return [][]byte{nil}
	}
	return [][]byte{nsKey(dir, ""), []byte(dir + "/")}
}

func (t boltTx) below(user, dir, name string, fn func(string, string, entry) error) error {
	b, err := t.ns(user)
	if err != nil {
		return err
	}
	for _, p := range belowPrefixes(dir) {
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			d, nm, err := splitKey(k)
			if err != nil {
				return err
			}
			if name != "" && nm != name {
				continue
			}
			e, err := parseEntry(v)
			if err != nil {
				return err
			}
			if err := fn(d, nm, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t boltTx) moveBelow(user, src, dst string) error {
	b, err := t.ns(user)
	if err != nil {
		return err
	}
	return rekey(b, belowPrefixes(src), func(k []byte) []byte { return append([]byte(dst), k[len(src):]...) })
}

// rekey renames every key of b with one of prefixes to to(key).
func rekey(b *bolt.Bucket, prefixes [][]byte, to func([]byte) []byte) error {
	var moves [][2][]byte
	for _, p := range prefixes {
		c := b.Cursor()
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			moves = append(moves, [2][]byte{bytes.Clone(k), to(k)})
		}
	}
	for _, m := range moves {
		v := bytes.Clone(b.Get(m[0]))
		if err := b.Delete(m[0]); err != nil {
			return err
		}
		if err := b.Put(m[1], v); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) counts(user string) (*bolt.Bucket, error) {
	return counts(t.tx, user)
}

func (t boltTx) dirCount(user, dir string) (int64, error) {
	c, err := t.counts(user)
	if c == nil || err != nil {
		return 0, err
	}
	return getU64(c, countKey(dir)), nil
}

func (t boltTx) setDirCount(user, dir string, n int64) error {
	c, err := t.counts(user)
	if err != nil {
		return err
	}
	return putU64(c, countKey(dir), n)
}

func (t boltTx) moveDirCounts(user, src, dst string) error {
	c, err := t.counts(user)
	if err != nil {
		return err
	}
	if v := bytes.Clone(c.Get(countKey(src))); v != nil {
		if err := c.Delete(countKey(src)); err != nil {
			return err
		}
		if err := c.Put(countKey(dst), v); err != nil {
			return err
		}
	}
	return rekey(c, [][]byte{countKey(src + "/")}, func(k []byte) []byte { return append(countKey(dst), k[1+len(src):]...) })
}

func (t boltTx) dirCounts(user string, fn func(string, int64) error) error {
	c := t.tx.Bucket(bucketCounts).Bucket([]byte(user))
	if c == nil {
		return fmt.Errorf("user %s: no accounting bucket", user)
	}
	return c.ForEach(func(k, _ []byte) error {
		if len(k) > 0 && k[0] == 'd' {
			return fn(string(k[1:]), getU64(c, k))
		}
		return nil
	})
}

func (t boltTx) account(user string) (userRec, int64, bool, error) {
	v := t.tx.Bucket(bucketUsers).Get([]byte(user))
	if v == nil {
		return userRec{}, 0, false, nil
	}
	u, err := parseUserRec(v)
	if err != nil {
		return userRec{}, 0, false, err
	}
	var meta int64
	if c := t.tx.Bucket(bucketCounts).Bucket([]byte(user)); c != nil {
		meta = getU64(c, metaKey)
	}
	return u, meta, true, nil
}

func (t boltTx) setUsed(user string, u userRec) error {
	return t.tx.Bucket(bucketUsers).Put([]byte(user), u.marshal())
}

func (t boltTx) setQuota(user string, quota int64) error {
	u, _, ok, err := t.account(user)
	if err != nil || !ok {
		return firstErr(err, fmt.Errorf("user %q: %w", user, storage.ErrNotFound))
	}
	u.quota = quota
	return t.tx.Bucket(bucketUsers).Put([]byte(user), u.marshal())
}

func (t boltTx) setMeta(user string, meta int64) error {
	c, err := t.counts(user)
	if err != nil {
		return err
	}
	return putU64(c, metaKey, meta)
}

func (t boltTx) blob(h [32]byte) (blobRec, []byte, bool, error) {
	v := t.tx.Bucket(bucketBlobs).Get(h[:])
	if v == nil {
		return blobRec{}, nil, false, nil
	}
	r, err := parseBlobRec(v)
	if err != nil {
		return blobRec{}, nil, false, err
	}
	var data []byte
	if r.inline {
		data = bytes.Clone(t.tx.Bucket(bucketData).Get(dataKey(r.dataID)))
		if data == nil {
			data = []byte{} // missing: the length check of the reader reports it
		}
	}
	return r, data, true, nil
}

// incref records new content in the blob store with gen as its key (the pin's: hold); gc
// waits for every hold (gcMu), so the record an upload holds is the one it references.
func (t boltTx) incref(h [32]byte, size int64, inline []byte, gen int64) error {
	b := t.tx.Bucket(bucketBlobs)
	r := blobRec{size: size, inline: inline != nil}
	if inline == nil {
		r.key = gen
	}
	if v := b.Get(h[:]); v != nil {
		var err error
		if r, err = parseBlobRec(v); err != nil {
			return err
		}
	} else if inline != nil {
		d := t.tx.Bucket(bucketData)
		d.FillPercent = 1.0 // append-only keys: fill pages completely
		id, err := d.NextSequence()
		if err != nil {
			return err
		}
		r.dataID = id
		if err := d.Put(dataKey(id), inline); err != nil {
			return err
		}
	}
	r.refs++
	return b.Put(h[:], r.marshal())
}

func (t boltTx) decref(h [32]byte) error {
	b := t.tx.Bucket(bucketBlobs)
	v := b.Get(h[:])
	if v == nil {
		return fmt.Errorf("%w: entry references unknown blob %x", errRecord, h[:8])
	}
	r, err := parseBlobRec(v)
	if err != nil {
		return err
	}
	if r.refs > 0 {
		r.refs--
	}
	return b.Put(h[:], r.marshal())
}

func (t boltTx) blobs(fn func([32]byte, blobRec) error) error {
	return t.tx.Bucket(bucketBlobs).ForEach(func(k, v []byte) error {
		var h [32]byte
		r, err := parseBlobRec(v)
		if err == nil && len(k) != 32 {
			err = fmt.Errorf("%w: blob key of %d bytes", errRecord, len(k))
		}
		if err != nil {
			return fmt.Errorf("blob record %x: %w", k, err)
		}
		copy(h[:], k)
		return fn(h, r)
	})
}

func (t boltTx) users(fn func(string, userRec) error) error {
	return t.tx.Bucket(bucketUsers).ForEach(func(k, v []byte) error {
		u, err := parseUserRec(v)
		if err != nil {
			return fmt.Errorf("user %q: %w", k, err)
		}
		return fn(string(k), u)
	})
}

func (t boltTx) createUser(name string, u userRec) error {
	users := t.tx.Bucket(bucketUsers)
	if users.Get([]byte(name)) != nil {
		return fmt.Errorf("user %q: %w", name, storage.ErrExists)
	}
	if _, err := t.tx.Bucket(bucketNS).CreateBucketIfNotExists([]byte(name)); err != nil {
		return err
	}
	if _, err := t.tx.Bucket(bucketCounts).CreateBucketIfNotExists([]byte(name)); err != nil {
		return err
	}
	return users.Put([]byte(name), u.marshal())
}

func (t boltTx) dropUser(name string) error {
	for _, b := range [][]byte{bucketNS, bucketCounts} {
		if t.tx.Bucket(b).Bucket([]byte(name)) != nil {
			if err := t.tx.Bucket(b).DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
	}
	return t.tx.Bucket(bucketUsers).Delete([]byte(name))
}
