package storeserver

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
)

// bucketCounts holds one nested bucket per user with the user's metadata accounting
// (docs/formats/store-records.md): key "d"+dir -> entries directly in dir, key "m" ->
// metadata bytes (EntryOverhead plus the key length of every entry). Both are 8-byte
// big-endian integers. They bound entries per directory and count metadata against the
// quota, so names and directories cost quota like content does.
var bucketCounts = []byte("counts")

var metaKey = []byte("m")

func countKey(dir string) []byte { return append([]byte{'d'}, dir...) }

// metaCost is what one entry dir/name costs against the quota.
func metaCost(dir, name string) int64 { return int64(len(dir)+1+len(name)) + EntryOverhead }

func getU64(b *bolt.Bucket, k []byte) int64 {
	v := b.Get(k)
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putU64(b *bolt.Bucket, k []byte, n int64) error {
	if n <= 0 {
		return b.Delete(k)
	}
	return b.Put(k, binary.BigEndian.AppendUint64(nil, uint64(n)))
}

// counts returns the user's accounting bucket, creating it in a write transaction.
func counts(tx *bolt.Tx, user string) (*bolt.Bucket, error) {
	if c := tx.Bucket(bucketCounts).Bucket([]byte(user)); c != nil || !tx.Writable() {
		return c, nil
	}
	return tx.Bucket(bucketCounts).CreateBucket([]byte(user))
}

// charge adjusts the user's content bytes and metadata bytes; when either grows, the sum
// must stay within the quota.
func charge(tx *bolt.Tx, user string, data, meta int64) error {
	b := tx.Bucket(bucketUsers)
	v := b.Get([]byte(user))
	if v == nil {
		return fmt.Errorf("user %q: %w", user, storage.ErrPermission)
	}
	u, err := parseUserRec(v)
	if err != nil {
		return err
	}
	c, err := counts(tx, user)
	if err != nil {
		return err
	}
	m := max(getU64(c, metaKey)+meta, 0)
	u.used = max(u.used+data, 0)
	if (data > 0 || meta > 0) && u.quota > 0 && u.used+m > u.quota {
		return fmt.Errorf("user %q would store %d bytes of content and %d of names, quota %d: %w", user, u.used, m, u.quota, storage.ErrQuota)
	}
	if meta != 0 {
		if err := putU64(c, metaKey, m); err != nil {
			return err
		}
	}
	if data == 0 {
		return nil
	}
	return b.Put([]byte(user), u.marshal())
}

// addEntry accounts a new entry dir/name: one more in dir (within MaxDirEntries) and its
// metadata bytes against the quota.
func (n *Namespace) addEntry(tx *bolt.Tx, dir, name string) error {
	c, err := counts(tx, n.user)
	if err != nil {
		return err
	}
	k := countKey(dir)
	have := getU64(c, k)
	if lim := int64(n.s.cfg.Limits.MaxDirEntries); have >= lim {
		return limitErr("directory %.64q has %d entries, limit %d", dir, have, lim)
	}
	if err := putU64(c, k, have+1); err != nil {
		return err
	}
	return charge(tx, n.user, 0, metaCost(dir, name))
}

// removeEntry undoes addEntry; isDir also drops the removed directory's own count.
func (n *Namespace) removeEntry(tx *bolt.Tx, dir, name string, isDir bool) error {
	c, err := counts(tx, n.user)
	if err != nil {
		return err
	}
	k := countKey(dir)
	if err := putU64(c, k, getU64(c, k)-1); err != nil {
		return err
	}
	if isDir {
		if err := c.Delete(countKey(storage.Join(dir, name))); err != nil {
			return err
		}
	}
	return charge(tx, n.user, 0, -metaCost(dir, name))
}

// MetaUsage returns a user's metadata bytes (what names and directories cost against the
// quota) and the number of entries directly in dir.
func (s *Service) MetaUsage(user, dir string) (meta, entries int64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if c := tx.Bucket(bucketCounts).Bucket([]byte(user)); c != nil {
			meta, entries = getU64(c, metaKey), getU64(c, countKey(dir))
		}
		return nil
	})
	return meta, entries, err
}

// buildCounts fills bucketCounts from the namespaces: a database from before the
// accounting existed gets it on first open (one pass over all names).
func buildCounts(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketCounts) != nil {
			return nil
		}
		all, err := tx.CreateBucket(bucketCounts)
		if err != nil {
			return err
		}
		return tx.Bucket(bucketNS).ForEachBucket(func(user []byte) error {
			c, err := all.CreateBucket(user)
			if err != nil {
				return err
			}
			per := map[string]int64{}
			var meta int64
			err = tx.Bucket(bucketNS).Bucket(user).ForEach(func(k, _ []byte) error {
				dir, name, err := splitKey(k)
				if err != nil {
					return err
				}
				per[dir]++
				meta += metaCost(dir, name)
				return nil
			})
			if err != nil {
				return err
			}
			for d, n := range per {
				if err := putU64(c, countKey(d), n); err != nil {
					return err
				}
			}
			return putU64(c, metaKey, meta)
		})
	})
}
