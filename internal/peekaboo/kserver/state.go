package kserver

import (
	"fmt"
	"github.com/veil-project/veil/internal/server"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

var (
	bucketKeys = []byte("keys")
)

func openDB(path string) (*bbolt.DB, error) {
	return server.OpenState(path, "K-server", "1", 2*time.Second, bucketKeys)
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

// store commits items in one transaction (fsynced), then adds them to the index.
func (s *Server) store(items []wire.KeyItem) error {
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		for i := range items {
			if err := b.Put(items[i].ID[:], wire.MarshalKeyRecord(&items[i])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range items {
		s.idx.Put(&items[i])
	}
	return nil
}

// remove deletes ids in one transaction and from the index; it returns how many existed.
func (s *Server) remove(ids []wire.ID) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bbolt.Tx) error {
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
