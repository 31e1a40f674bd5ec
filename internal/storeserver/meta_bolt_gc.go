package storeserver

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// collect holds gcMu exclusively (uploads and reads wait) while it deletes unreferenced
// records, their content and content without a record.
func (m *boltMeta) collect(ctx context.Context, blobs blobStore) (GCReport, error) {
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	var rep GCReport
	var dead [][32]byte // unreferenced blobs in the blob store
	known := map[[32]byte]bool{}
	err := m.db.Update(func(tx *bolt.Tx) error {
		var gone [][32]byte // every unreferenced record
		err := boltTx{tx}.blobs(func(h [32]byte, r blobRec) error {
			switch {
			case r.refs > 0:
				known[h] = true
				return nil
			case r.inline:
				if err := tx.Bucket(bucketData).Delete(dataKey(r.dataID)); err != nil {
					return err
				}
			default:
				dead = append(dead, h)
			}
			rep.Blobs++
			rep.Bytes += r.size
			gone = append(gone, h)
			return nil
		})
		if err != nil {
			return err
		}
		for _, h := range gone {
			if err := tx.Bucket(bucketBlobs).Delete(h[:]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for _, h := range dead {
		if err := blobs.remove(ctx, h); err != nil {
			return rep, fmt.Errorf("remove %x: %w", h[:8], err)
		}
	}
	orphans, err := orphanBlobs(ctx, blobs, known)
	if err != nil {
		return rep, err
	}
	for _, h := range orphans {
		if err := blobs.remove(ctx, h); err != nil {
			return rep, fmt.Errorf("remove orphan %x: %w", h[:8], err)
		}
		rep.OrphanBlobs++
	}
	return rep, nil
}
