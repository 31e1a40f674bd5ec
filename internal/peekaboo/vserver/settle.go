package vserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// A pair this server stored whose chunk the K-server never acknowledged (the relay got no
// answer, or this server crashed between its commit and the relay) may or may not be on
// the K-server. Its owner was never told it was published, so this server settles it the
// way the owner's failed publication reads: not published. It relays an unpublication of
// the chunk's pair ids (the K-server deletes what it holds, and sees the ids of one chunk,
// which it saw together anyway), and removes the pairs itself once the K-server has
// answered two such unpublications at least a relay timeout apart: a chunk relay still
// queued on the K-server when it answered the first (a K-server that was stopped while
// both were sent) is then done, so its keys do not stay behind with nothing naming them.
// Until then `list` reports the pairs as unacknowledged (docs/design-peekaboo.md,
// "Publication").
type settler struct {
	mu       sync.Mutex
	inflight map[wire.ID]bool      // chunk tags whose publication still waits for its relay
	answered map[wire.ID]time.Time // chunk tag -> when the K-server first answered its unpublication
	wake     chan struct{}
}

func newSettler() *settler {
	return &settler{inflight: map[wire.ID]bool{}, answered: map[wire.ID]time.Time{}, wake: make(chan struct{}, 1)}
}

// begin marks a chunk whose relay is under way: it is not settled meanwhile.
func (st *settler) begin(tag wire.ID) {
	st.mu.Lock()
	st.inflight[tag] = true
	st.mu.Unlock()
}

// end is the chunk's relay done; failed wakes the settling loop (its pairs stay marked).
func (st *settler) end(tag wire.ID, failed bool) {
	st.mu.Lock()
	delete(st.inflight, tag)
	st.mu.Unlock()
	if failed {
		st.poke()
	}
}

// poke wakes the settling loop: pairs stay marked that it should settle.
func (st *settler) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// unackedChunk is one chunk's unacknowledged pairs.
type unackedChunk struct {
	owner string
	ids   []wire.ID
}

// unacked returns the marked pairs by chunk tag, leaving out chunks whose relay is under way.
func (s *Server) unacked() (map[wire.ID]*unackedChunk, error) {
	out := map[wire.ID]*unackedChunk{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		pb := tx.Bucket(bucketPairs)
		return tx.Bucket(bucketUnacked).ForEach(func(k, v []byte) error {
			id, err := wire.ParseID(k)
			if err != nil {
				return err
			}
			tag, err := wire.ParseID(v)
			if err != nil {
				return err
			}
			v = pb.Get(k)
			if v == nil {
				return nil // not listed (removePairs drops the mark with the pair)
			}
			rec, err := wire.ParsePairRecord(v)
			if err != nil {
				return err
			}
			c := out[tag]
			if c == nil {
				c = &unackedChunk{owner: rec.Owner}
				out[tag] = c
			}
			c.ids = append(c.ids, id)
			return nil
		})
	})
	s.settle.mu.Lock()
	for tag := range s.settle.inflight {
		delete(out, tag)
	}
	for tag := range s.settle.answered {
		if out[tag] == nil {
			delete(s.settle.answered, tag) // unpublished by its owner meanwhile
		}
	}
	s.settle.mu.Unlock()
	return out, err
}

// settleUnacked runs one round over the unacknowledged chunks: it relays an unpublication
// of each and removes the pairs of those whose unpublication the K-server answered twice,
// a relay timeout apart. It returns how many pairs it removed and how many stay marked.
func (s *Server) settleUnacked(ctx context.Context) (removed, left int, err error) {
	chunks, err := s.unacked()
	if err != nil {
		return 0, 0, err
	}
	// One relay item per chunk, submitted together (the mixer batches them): a K-server
	// that does not answer costs one relay timeout per round, not one per chunk.
	type answer struct {
		tag wire.ID
		err error
	}
	answers := make(chan answer, len(chunks))
	for tag, c := range chunks {
		go func() {
			res, err := s.mix.submit(ctx, wire.RelayItem{Kind: wire.KindUnpublish, Payload: (&wire.IDs{IDs: c.ids}).Marshal()})
			if err == nil && res.Status != wire.StatusOK {
				err = fmt.Errorf("%w: unpublication refused (status %d)", errKServer, res.Status)
			}
			answers <- answer{tag, err}
		}()
	}
	for range chunks {
		a := <-answers
		tag, c, rerr := a.tag, chunks[a.tag], a.err
		if rerr != nil {
			err, left = rerr, left+len(c.ids)
			continue
		}
		s.settle.mu.Lock()
		first, seen := s.settle.answered[tag]
		if !seen {
			s.settle.answered[tag] = time.Now()
		}
		s.settle.mu.Unlock()
		if !seen || time.Since(first) < s.cfg.RelayTimeout {
			left += len(c.ids)
			continue
		}
		gone, rerr := s.removePairs(c.owner, c.ids)
		if rerr != nil {
			err, left = rerr, left+len(c.ids)
			continue
		}
		s.settle.mu.Lock()
		delete(s.settle.answered, tag)
		s.settle.mu.Unlock()
		removed += len(gone)
		s.log.Info("removed the pairs of a chunk the k-server never acknowledged", "pairs", len(gone))
	}
	return removed, left, err
}

// settleLoop settles unacknowledged chunks at start and after every publication whose
// relay failed, a round every relay timeout while any stay marked.
func (s *Server) settleLoop(ctx context.Context) {
	for {
		_, left, err := s.settleUnacked(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("settle unacknowledged pairs", "err", err, "left", left)
		}
		var again <-chan time.Time
		if left > 0 {
			again = time.After(s.cfg.RelayTimeout)
		}
		select {
		case <-ctx.Done():
			return
		case <-again:
		case <-s.settle.wake:
		}
	}
}
