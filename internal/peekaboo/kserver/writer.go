package kserver

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
)

// Which veil wrote kserver.db last (docs/formats/peekaboo-state.md, meta/writer). A veil
// that kept no replay mark answers queries without moving it, so a K-server downgraded to
// one and upgraded again found the mark it had left, below the stamps of the queries the
// older veil answered: those could be replayed, for up to a replay window. Every
// transaction this veil commits records its own id in meta/writer; an open that finds
// another transaction committed after it knows an older veil opened the file (each open
// commits one: server.OpenState).

var keyWriter = []byte("writer") // in meta: u64, the id of the last transaction a veil keeping it committed

// own records in tx that this veil wrote it.
func own(tx *bbolt.Tx) error {
	return tx.Bucket(bucketMeta).Put(keyWriter, binary.BigEndian.AppendUint64(nil, uint64(tx.ID())))
}

// othersWrote reports, right after openDB (whose open is one transaction of its own),
// whether a transaction own did not record was committed after the last one it did: an
// older veil opened the file since. State without meta/writer tells nothing (false).
func othersWrote(db *bbolt.DB) (bool, error) {
	var others bool
	err := db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyWriter)
		if v == nil {
			return nil
		}
		if len(v) != 8 {
			return fmt.Errorf("meta/writer: %x, want a u64 transaction id", v)
		}
		others = uint64(tx.ID()) != binary.BigEndian.Uint64(v)+1
		return nil
	})
	return others, err
}
