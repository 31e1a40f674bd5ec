package vserver

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/veil-project/veil/internal/server"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

var (
	bucketUsers  = []byte("users")
	bucketPairs  = []byte("pairs")
	bucketOwners = []byte("owners")
	// bucketUnacked marks the pairs whose chunk the K-server has not acknowledged: pair id
	// -> the chunk's tag (its first pair id), docs/formats/peekaboo-state.md.
	bucketUnacked = []byte("unacked")
)

// errNotYours refuses a publication that reuses another owner's pair id.
var errNotYours = errors.New("a pair id in the chunk belongs to another owner")

// errRepublish refuses a publication that names a pair id published before (the owner's
// own): the K-server never replaces a pair's key (docs/design-peekaboo.md, "Publication").
var errRepublish = errors.New("a pair id is never published twice")

// republishErr says which pair a publication names again and what to do instead.
func republishErr(i int, id wire.ID, reason string) error {
	return fmt.Errorf("%w: pair %d (id %x) %s; to change a pair, unpublish it and publish it again (the client draws a fresh id), and retry a failed publication with fresh ids",
		errRepublish, i, id[:4], reason)
}

func openDB(path string) (*bbolt.DB, error) {
	return server.OpenState(path, "V-server", "1", 2*time.Second, bucketUsers, bucketPairs, bucketOwners, bucketUnacked, pir.BucketName)
}

func putUser(db *bbolt.DB, name string, u *wire.UserRecord) error {
	return db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketUsers)
		if b.Get([]byte(name)) != nil {
			return fmt.Errorf("user %q exists", name)
		}
		return b.Put([]byte(name), wire.MarshalUserRecord(u))
	})
}

func loadUsers(db *bbolt.DB) (map[string]wire.UserRecord, error) {
	out := map[string]wire.UserRecord{}
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(k, v []byte) error {
			u, err := wire.ParseUserRecord(v)
			if err != nil {
				return fmt.Errorf("user %q: %w", k, err)
			}
			out[string(k)] = *u
			return nil
		})
	})
	return out, err
}

func ownerKey(owner string, id wire.ID) []byte {
	return append(append([]byte(owner), 0), id[:]...)
}

// storePairs commits an owner's chunk in one transaction, each pair marked unacknowledged
// (until ackPairs) under the chunk's tag, its first pair id.
func storePairs(db *bbolt.DB, owner string, pairs []wire.PublishPair) error {
	return db.Update(func(tx *bbolt.Tx) error {
		pb, ob, ub := tx.Bucket(bucketPairs), tx.Bucket(bucketOwners), tx.Bucket(bucketUnacked)
		seen := make(map[wire.ID]bool, len(pairs))
		for i := range pairs {
			p := &pairs[i]
			if old := pb.Get(p.ID[:]); old != nil {
				rec, err := wire.ParsePairRecord(old)
				if err != nil || rec.Owner != owner {
					return errNotYours
				}
				return republishErr(i, p.ID, "is published already")
			}
			if seen[p.ID] {
				return republishErr(i, p.ID, "is named twice in the chunk")
			}
			seen[p.ID] = true
			rec := wire.MarshalPairRecord(&wire.PairRecord{Owner: owner, Value: p.Value, ACL: p.ACL, OwnerBlob: p.OwnerBlob})
			if err := pb.Put(p.ID[:], rec); err != nil {
				return err
			}
			if err := errors.Join(ob.Put(ownerKey(owner, p.ID), nil), ub.Put(p.ID[:], pairs[0].ID[:])); err != nil {
				return err
			}
		}
		return nil
	})
}

// ackPairs clears the marks of a chunk the K-server acknowledged, in one transaction.
func ackPairs(db *bbolt.DB, pairs []wire.PublishPair) error {
	return db.Update(func(tx *bbolt.Tx) error {
		ub := tx.Bucket(bucketUnacked)
		for i := range pairs {
			if err := ub.Delete(pairs[i].ID[:]); err != nil {
				return err
			}
		}
		return nil
	})
}

// removePairs deletes the owner's pairs among ids, and their private-query entries, in
// one transaction and returns those it deleted.
func (s *Server) removePairs(owner string, ids []wire.ID) ([]wire.ID, error) {
	var gone []wire.ID
	_, err := pir.Update(s.db, s.table, func(tx *bbolt.Tx) ([]pir.Change, error) {
		pb, ob, ub := tx.Bucket(bucketPairs), tx.Bucket(bucketOwners), tx.Bucket(bucketUnacked)
		gone = gone[:0]
		for _, id := range ids {
			if ob.Get(ownerKey(owner, id)) == nil {
				continue
			}
			if err := errors.Join(pb.Delete(id[:]), ob.Delete(ownerKey(owner, id)), ub.Delete(id[:])); err != nil {
				return nil, err
			}
			gone = append(gone, id)
		}
		changes := make([]pir.Change, len(gone))
		for i, id := range gone {
			changes[i].ID = id
		}
		return changes, nil
	})
	return gone, err
}

// ownedPairs returns the ids among ids that owner holds, each once.
func ownedPairs(db *bbolt.DB, owner string, ids []wire.ID) ([]wire.ID, error) {
	var out []wire.ID
	seen := map[wire.ID]bool{}
	err := db.View(func(tx *bbolt.Tx) error {
		ob := tx.Bucket(bucketOwners)
		for _, id := range ids {
			if !seen[id] && ob.Get(ownerKey(owner, id)) != nil {
				seen[id] = true
				out = append(out, id)
			}
		}
		return nil
	})
	return out, err
}

// listPairs returns the owner's pairs, as a List of version v (1, or 2 with their states).
func listPairs(db *bbolt.DB, owner string, v uint8) (*wire.List, error) {
	out := &wire.List{Version: v}
	prefix := append([]byte(owner), 0)
	err := db.View(func(tx *bbolt.Tx) error {
		pb, ub := tx.Bucket(bucketPairs), tx.Bucket(bucketUnacked)
		c := tx.Bucket(bucketOwners).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			id, err := wire.ParseID(k[len(prefix):])
			if err != nil {
				return err
			}
			rec, err := wire.ParsePairRecord(pb.Get(id[:]))
			if err != nil {
				return fmt.Errorf("pair %x: %w", id, err)
			}
			l := wire.Listed{ID: id, Value: rec.Value, ACL: rec.ACL, OwnerBlob: rec.OwnerBlob}
			if ub.Get(id[:]) != nil {
				l.State = wire.PairUnacked
			}
			out.Pairs = append(out.Pairs, l)
		}
		return nil
	})
	return out, err
}

// release maps matched ids to the values user may see; others are dropped unseen.
func release(db *bbolt.DB, user string, ms []wire.Matched) ([]wire.Result, error) {
	var out []wire.Result
	err := db.View(func(tx *bbolt.Tx) error {
		pb := tx.Bucket(bucketPairs)
		for _, m := range ms {
			v := pb.Get(m.ID[:])
			if v == nil {
				continue // inert: published on the K-server only, or since removed
			}
			rec, err := wire.ParsePairRecord(v)
			if err != nil {
				return fmt.Errorf("pair %x: %w", m.ID, err)
			}
			if len(rec.ACL) > 0 && rec.Owner != user && !slices.Contains(rec.ACL, user) {
				continue
			}
			out = append(out, wire.Result{ID: m.ID, Match: m.Record, Value: bytes.Clone(rec.Value)})
		}
		return nil
	})
	return out, err
}
