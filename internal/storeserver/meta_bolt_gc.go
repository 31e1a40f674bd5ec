package storeserver

import (
	"context"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// collect holds gcMu exclusively (uploads and reads wait) while it deletes unreferenced
// records, their content and content without a record.
func (m *boltMeta) collect(ctx context.Context, blobs blobStore) (GCReport, error) {
	m.gcMu.Lock()
	defer m.gcMu.Unlock()
	m.pins.forgetKeys()
	var rep GCReport
	var dead []blobID             // unreferenced blobs in the blob store
	known := map[[32]byte]int64{} // referenced blobs in the blob store: their keys
	err := m.db.Update(func(tx *bolt.Tx) error {
		var gone [][32]byte // every unreferenced record
		err := boltTx{tx}.blobs(func(h [32]byte, r blobRec) error {
			switch {
			case r.refs > 0:
				known[h] = r.key
				return nil
			case r.inline:
				if err := tx.Bucket(bucketData).Delete(dataKey(r.dataID)); err != nil {
					return err
				}
			default:
				dead = append(dead, blobID{h, r.key})
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
	for _, b := range dead {
		if err := blobs.remove(ctx, b); err != nil {
			return rep, fmt.Errorf("remove %x: %w", b.h[:8], err)
		}
	}
	orphans, err := orphanBlobs(ctx, blobs, func(b blobID) bool {
		key, ok := known[b.h]
		return ok && key == b.key
	})
	if err != nil {
		return rep, err
	}
	for _, b := range orphans {
		if err := blobs.remove(ctx, b); err != nil {
			return rep, fmt.Errorf("remove orphan %x: %w", b.h[:8], err)
		}
		rep.OrphanBlobs++
	}
	return rep, nil
}

// blobPins counts the uploads holding each blob (boltMeta.hold), so that a refused
// upload removes its content only when no other upload is about to reference it, and
// keeps the key of the copy they store (blobID.key).
type blobPins struct {
	mu       sync.Mutex
	n        map[[32]byte]int
	key      map[[32]byte]int64         // while n counts holds: the key of their copy
	removing map[[32]byte]chan struct{} // closed when discard has removed the blob
}

// keyOf is the key of the copy the holds of h store: the one the first of them found
// (read: the record's, or a new random one when there is none), kept while any hold is
// counted. The caller holds h (add) and gcMu shared, so the record read stays, and only a
// hold of h records it, with this key. A copy stored after a record of h was removed
// (gc, discard) so gets a name of its own, and a removal of the old copy that reaches the
// blob store late cannot delete it (docs/design-store.md, "A late removal").
func (p *blobPins) keyOf(h [32]byte, read func() (int64, error)) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if k, ok := p.key[h]; ok {
		return k, nil
	}
	k, err := read()
	if err == nil {
		p.key[h] = k
	}
	return k, err
}

// forgetKeys drops the keys kept for the holds counted (keyOf), called by gc once it
// holds gcMu alone: no hold has read its key then (a hold reads it under gcMu shared), but
// holds counted before gc began wait for it, and the copy their key names may be one gc
// removes. They read the record again after gc, and a copy they store after its removal
// gets a name of its own. Found by review: the key outlived the gc while such a hold was
// counted, and gc's DELETE that landed late deleted that upload's acknowledged copy
// (TestGCForgetsHeldKeysBbolt).
func (p *blobPins) forgetKeys() {
	p.mu.Lock()
	clear(p.key)
	p.mu.Unlock()
}

// add counts a hold on h, once no discard is removing h (an upload of the same content
// then writes it anew).
func (p *blobPins) add(ctx context.Context, h [32]byte) error {
	p.mu.Lock()
	for p.removing[h] != nil {
		done := p.removing[h]
		p.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
		p.mu.Lock()
	}
	p.n[h]++
	p.mu.Unlock()
	return nil
}

func (p *blobPins) drop(h [32]byte) {
	p.mu.Lock()
	p.dropLocked(h)
	p.mu.Unlock()
}

func (p *blobPins) dropLocked(h [32]byte) {
	if p.n[h]--; p.n[h] <= 0 {
		delete(p.n, h)
		delete(p.key, h)
	}
}

// discard removes h from blobs when the caller's pin is its only hold and no record
// counts it (a record without references is gc's: its content predates the upload).
// Only an upload's hold creates a record of content in the blob store (incref), and
// holds of h wait meanwhile, so nothing can come to reference it during the removal. A
// pin that is not alone is dropped in the same critical section as the count is read,
// so of two refused uploads of the same content the second to end finds itself alone.
func (m *boltMeta) discard(ctx context.Context, h [32]byte, pin blobPin, blobs blobStore) error {
	defer m.gcMu.RUnlock() // the pin's hold on gc; its count is dropped below
	p := &m.pins
	p.mu.Lock()
	if p.n[h] != 1 || p.removing[h] != nil {
		p.dropLocked(h)
		p.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	p.removing[h] = done
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.removing, h)
		p.dropLocked(h)
		p.mu.Unlock()
		close(done)
	}()
	var known bool
	err := m.view(ctx, func(t metaTx) error {
		_, _, ok, err := t.blob(h)
		known = ok
		return err
	})
	if err != nil || known {
		return err
	}
	return blobs.remove(ctx, blobID{h, pin.key})
}
