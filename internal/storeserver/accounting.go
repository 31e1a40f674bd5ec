package storeserver

import (
	"context"
	"crypto/subtle"
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
// must stay within the quota, less what the user's uploads in progress have reserved
// (quota.go). Every write of a namespace calls it, in its transaction: it
// fails with storage.ErrPermission unless the user record is still the account n was
// opened for (not removed, nor removed and created again under the same name).
func (n *Namespace) charge(t metaTx, data, meta int64) error {
	user := n.user
	u, m, ok, err := t.account(user)
	if err != nil {
		return err
	}
	if !ok || subtle.ConstantTimeCompare(u.secretHash[:], n.secret[:]) != 1 {
		return fmt.Errorf("user %q: %w", user, storage.ErrPermission)
	}
	m = max(m+meta, 0)
	u.used = max(u.used+data, 0)
	if (data > 0 || meta > 0) && u.quota > 0 {
		var held int64 // settled for content headed for the blob store (quota.go)
		if !n.s.meta.shared() {
			held = n.s.heldBy(user, t)
		} else if held, err = t.reserved(user); err != nil { // every node's (meta_pg_quota.go)
			return err
		}
		if u.used+m+held > u.quota {
			being := ""
			if held > 0 {
				being = fmt.Sprintf(", and uploads in progress %d more", held)
			}
			return fmt.Errorf("user %q would store %d bytes of content and %d of names%s, quota %d: %w",
				user, u.used, m, being, u.quota, storage.ErrQuota)
		}
	}
	if meta != 0 {
		if err := t.setMeta(user, m); err != nil {
			return err
		}
	}
	if data == 0 {
		return nil
	}
	return t.setUsed(user, u)
}

// addEntry accounts a new entry dir/name: one more in dir (within MaxDirEntries) and its
// metadata bytes against the quota.
func (n *Namespace) addEntry(t metaTx, dir, name string) error {
	have, err := n.roomIn(t, dir)
	if err != nil {
		return err
	}
	if err := t.setDirCount(n.user, dir, have+1); err != nil {
		return err
	}
	return n.charge(t, 0, metaCost(dir, name))
}

// removeEntry undoes addEntry; isDir also drops the removed directory's own count.
func (n *Namespace) removeEntry(t metaTx, dir, name string, isDir bool) error {
	have, err := t.dirCount(n.user, dir)
	if err != nil {
		return err
	}
	if err := t.setDirCount(n.user, dir, have-1); err != nil {
		return err
	}
	if isDir {
		if err := t.setDirCount(n.user, storage.Join(dir, name), 0); err != nil {
			return err
		}
	}
	return n.charge(t, 0, -metaCost(dir, name))
}

// MetaUsage returns a user's metadata bytes (what names and directories cost against the
// quota) and the number of entries directly in dir.
func (s *Service) MetaUsage(user, dir string) (meta, entries int64, err error) {
	err = s.meta.view(context.Background(), func(t metaTx) error {
		if _, meta, _, err = t.account(user); err != nil {
			return err
		}
		entries, err = t.dirCount(user, dir)
		return err
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
