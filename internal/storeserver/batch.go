package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// PutBatch stores small objects (at most InlineMax bytes each, kept in the database), and
// at most one larger object (up to MaxBatchBytes, stored as a blob first, as a Put stores
// it: a tree root of a large namespace), in one metadata transaction (metaStore.update:
// with bbolt grouped with concurrent puts into one commit), so one commit makes all of
// them durable or none. Conditions are checked
// first in the same transaction: a Create's name must be free, and so must an Absent's (a
// condition only: nothing is stored under it); a Match's name must hold a file whose
// content hash is *Match (storage.ErrChanged otherwise). They are checked against what was
// stored before the batch, whatever its other objects write. Every object is checked
// before the transaction; the answer is the same whether any content was new.
func (n *Namespace) PutBatch(ctx context.Context, objs []storage.Object) error {
	s := n.s
	if len(objs) == 0 {
		return nil
	}
	if len(objs) > s.cfg.MaxBatchObjects {
		return fmt.Errorf("batch of %d objects, at most %d: %w", len(objs), s.cfg.MaxBatchObjects, storewire.ErrLimit)
	}
	start := time.Now()
	var total, claimed int64 // claimed: what the inline objects may charge
	large := -1              // the index of the object over InlineMax, if any
	links := make([]func(metaTx) error, len(objs))
	var names [][2]string // what the links look up: PostgreSQL reads them in one statement
	for i, o := range objs {
		if err := s.cfg.Limits.checkPath(o.Dir, o.Name); err != nil {
			return fmt.Errorf("batch object %d: %w", i, err)
		}
		if o.Absent {
			if o.Create || o.Match != nil || len(o.Data) > 0 {
				return fmt.Errorf("batch object %d: an absent condition holds no data and has no other condition: %w", i, storewire.ErrBadBatch)
			}
			names = append(names, linkNames(o.Dir, o.Name)...)
			continue // a condition only: nothing to link
		}
		if o.Match != nil && o.Create {
			return fmt.Errorf("batch object %d: a match condition is not also a create: %w", i, storewire.ErrBadBatch)
		}
		if len(o.Data) > InlineMax {
			if large >= 0 || int64(len(o.Data)) > s.cfg.MaxBatchBytes {
				return fmt.Errorf("batch object %d: %d bytes, at most %d (but one object, up to %d): %w",
					i, len(o.Data), InlineMax, s.cfg.MaxBatchBytes, storage.ErrTooLarge)
			}
			large = i
		}
		if total += int64(len(o.Data)); total > s.cfg.MaxBatchBytes {
			return fmt.Errorf("batch of more than %d bytes: %w", s.cfg.MaxBatchBytes, storewire.ErrLimit)
		}
		data := o.Data
		if data == nil {
			data = []byte{} // inline, empty (nil would mean a blob file)
		}
		if i != large {
			claimed += claimCost(o.Dir, o.Name, int64(len(data)))
			links[i] = n.link(o.Dir, o.Name, sha256.Sum256(data), int64(len(data)), data, 0)
		}
		names = append(names, linkNames(o.Dir, o.Name)...)
	}
	c := n.claim(claimed) // one claim for the inline objects (quota.go), before the reservation
	defer c.release()
	var r *reservation
	settle := func(error) {}
	if large >= 0 { // a blob of its own, held from gc until the transaction references it
		o := objs[large]
		var err error
		if r, err = n.reserve(ctx, o.Dir, o.Name, int64(len(o.Data)), true); err != nil {
			return fmt.Errorf("put batch: object %d (%s): %w", large, storage.Join(o.Dir, o.Name), err)
		}
		defer r.release()
		sum, size, pin, err := s.spool(ctx, bytes.NewReader(o.Data), nil)
		if err != nil {
			return fmt.Errorf("put batch: object %d (%s): %w", large, storage.Join(o.Dir, o.Name), err)
		}
		settle = func(err error) { s.settle(sum, pin, err) } // refused: its content is removed
		links[large] = n.link(o.Dir, o.Name, sum, size, nil, pin.gen)
	}
	err := s.meta.updateNames(ctx, n.user, names, func(t metaTx) error {
		r.charging(t)
		for i, o := range objs { // conditions first, in the same transaction: all or nothing
			if !o.Create && !o.Absent && o.Match == nil {
				continue
			}
			e, ok, err := t.entry(n.user, o.Dir, o.Name)
			switch {
			case err != nil:
				return fmt.Errorf("batch object %d (%s): %w", i, storage.Join(o.Dir, o.Name), err)
			case o.Match == nil && ok:
				return fmt.Errorf("batch object %d (%s): %w", i, storage.Join(o.Dir, o.Name), storage.ErrExists)
			case o.Match != nil && (!ok || e.isDir() || e.hash != *o.Match):
				return fmt.Errorf("batch object %d (%s): %w", i, storage.Join(o.Dir, o.Name), storage.ErrChanged)
			}
		}
		for i, link := range links {
			if link == nil { // an absent condition
				continue
			}
			if err := link(t); err != nil {
				return fmt.Errorf("batch object %d (%s): %w", i, storage.Join(objs[i].Dir, objs[i].Name), err)
			}
		}
		return nil
	})
	settle(err)
	if err != nil {
		return fmt.Errorf("put batch: %w", err)
	}
	s.metrics.observe("batch", total, start)
	s.metrics.batch.Observe(float64(len(objs)))
	return nil
}

// BatchCreates says PutBatch honours storage.Object.Create (storage.CreateBatcher).
func (n *Namespace) BatchCreates() {}

// BatchAbsents says PutBatch honours storage.Object.Absent (storage.AbsentBatcher).
func (n *Namespace) BatchAbsents() {}

// BatchMatches says PutBatch honours storage.Object.Match (storage.MatchBatcher).
func (n *Namespace) BatchMatches() {}

var _ storage.MatchBatcher = (*Namespace)(nil)

// BatchLarge says PutBatch takes one object over storage.BatchMaxObjectSize
// (storage.LargeBatcher).
func (n *Namespace) BatchLarge() {}

// handleBatch is POST /v1/batch: the body is parsed whole (within the batch limits) before
// anything is stored; the answer is 204 whatever was new.
func (s *Service) handleBatch(w http.ResponseWriter, r *http.Request, a apiReq) {
	objs, err := storewire.ReadBatch(r.Body, storewire.BatchLimits{Objects: s.cfg.MaxBatchObjects,
		Bytes: s.cfg.MaxBatchBytes, ObjectSize: s.cfg.MaxBatchBytes, PathLen: s.cfg.Limits.MaxPathLen})
	if err == nil {
		err = a.ns.PutBatch(verifyCtx(r), objs)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
