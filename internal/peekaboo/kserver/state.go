package kserver

import (
	"bytes"
	"fmt"
	"github.com/veil-project/veil/internal/server"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

var (
	bucketKeys = []byte("keys")
)

func openDB(path string) (*bbolt.DB, error) {
	return server.OpenState(path, "K-server", "1", 2*time.Second, bucketKeys, pir.BucketName)
}

// load rebuilds the index from the keys bucket.
func load(db *bbolt.DB) (*index.Index, error) {
	idx := index.New()
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
			id, err := wire.ParseID(k)
			if err != nil {
				return err
			}
			it, err := wire.ParseKeyRecord(id, v)
			if err != nil {
				return fmt.Errorf("pair %x: %w", k, err)
			}
			idx.Put(it)
			return nil
		})
	})
	return idx, err
}

// store commits items in one transaction (fsynced) with their private-query entries,
// then adds them to the index. It returns the entries for the V-server's replica.
func (s *Server) store(items []wire.KeyItem) ([]wire.PIREntry, error) {
	changes := make([]pir.Change, len(items))
	for i := range items {
		changes[i].ID = items[i].ID
		if len(items[i].Pseudonyms) == 0 { // restricted pairs stay out: PIR bypasses the K-server's check
			e := pir.Derive(items[i].Key).Seal(items[i].ID)
			changes[i].Add = &e
		}
	}
	placed, err := s.update(changes, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		for i := range items {
			// The V-server checks who owns the id it reads in the clear; the id sealed in
			// the item is read here only, so a client could name another owner's pair in
			// it. Owners draw fresh random ids, so an id held already is refused (whole
			// chunk), never replaced. So is an id sharing its first 12 bytes (a match
			// record's nonce) with one held: two records of one reply must not share it.
			if k, _ := b.Cursor().Seek(items[i].ID[:12]); k != nil && bytes.HasPrefix(k, items[i].ID[:12]) {
				return fmt.Errorf("%w: publication item %d: pair id %x collides with one held", wire.ErrMalformed, i, items[i].ID[:4])
			}
			if err := b.Put(items[i].ID[:], wire.MarshalKeyRecord(&items[i])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range items {
		s.idx.Put(&items[i])
	}
	if s.table == nil {
		return nil, nil
	}
	out := make([]wire.PIREntry, len(items))
	for i, c := range changes {
		if c.Add != nil && placed[i] {
			out[i] = wire.PIREntry{Placed: true, Entry: c.Add.Bytes()}
		} else if c.Add != nil {
			s.m.pirOverflow.Inc()
		}
	}
	return out, nil
}

// remove deletes ids in one transaction and from the index; it returns how many existed.
func (s *Server) remove(ids []wire.ID) (int, error) {
	n := 0
	changes := make([]pir.Change, len(ids))
	for i, id := range ids {
		changes[i].ID = id
	}
	_, err := s.update(changes, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		n = 0
		for _, id := range ids {
			if b.Get(id[:]) != nil {
				n++
				if err := b.Delete(id[:]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		s.idx.Delete(id)
	}
	return n, nil
}

// Has reports whether the K-server holds a key for pair id (for checks and operators).
func (s *Server) Has(id wire.ID) bool {
	found := false
	s.db.View(func(tx *bbolt.Tx) error {
		found = tx.Bucket(bucketKeys).Get(id[:]) != nil
		return nil
	})
	return found
}
