package vserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// errPIROff answers private-query requests on a deployment without a table.
var errPIROff = errors.New("private queries are off on this deployment (its relay credential names no table)")

// openTable makes the V-server's replica of the private-query table (nil: off).
func openTable(rc *wire.RelayCred, db *bbolt.DB) (*pir.Table, error) {
	p := pir.Params{Bits: rc.PIRBits, Slots: rc.PIRSlots}
	if !p.Enabled() {
		return nil, nil
	}
	t, err := pir.NewTable(p)
	if err != nil {
		return nil, fmt.Errorf("relay credential: %w", err)
	}
	return t, db.View(func(tx *bbolt.Tx) error { return pir.Load(tx, t) })
}

// applyPIR runs the table changes in their own transaction (undone in memory if it
// does not commit).
func (s *Server) applyPIR(changes []pir.Change) error {
	if s.table == nil || len(changes) == 0 {
		return nil
	}
	_, err := pir.Update(s.db, s.table, func(*bbolt.Tx) ([]pir.Change, error) { return changes, nil })
	return err
}

// replicate stores the entries the K-server made for a publication chunk, so both tables
// hold the same.
func (s *Server) replicate(pairs []wire.PublishPair, ack *wire.PublishAck) error {
	if s.table == nil {
		return nil
	}
	if len(ack.Entries) != len(pairs) {
		return fmt.Errorf("k-server sent %d private-query entries for %d pairs (is its table configured?)", len(ack.Entries), len(pairs))
	}
	changes := make([]pir.Change, len(pairs))
	for i, e := range ack.Entries {
		changes[i].ID = pairs[i].ID
		if e.Placed {
			pe := pir.EntryFrom(e.Entry)
			changes[i].Add = &pe
		}
	}
	return s.applyPIR(changes)
}

func (s *Server) handlePIRParams(w http.ResponseWriter, _ *http.Request, _ string, _ []byte) (int, error) {
	if s.table == nil {
		return http.StatusNotFound, errPIROff
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.table.Params())
	return http.StatusOK, nil
}

// handlePIR answers a private query: its own share from its replica, the K-server's
// (sealed to the client) through the mixer, without the client's identity.
func (s *Server) handlePIR(w http.ResponseWriter, r *http.Request, _ string, body []byte) (int, error) {
	if s.table == nil {
		return http.StatusNotFound, errPIROff
	}
	req, err := wire.ParsePIRSearch(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	k, err := s.pirKey(req.Key0)
	if err != nil {
		return http.StatusBadRequest, err
	}
	type share struct {
		b   []byte
		err error
	}
	own := make(chan share, 1)
	go func() { b, err := s.table.Answer(k); own <- share{b, err} }()
	res, err := s.mix.submit(r.Context(), wire.RelayItem{Kind: wire.KindPIR, Payload: req.Sealed})
	mine := <-own
	if err != nil {
		return relayErr(err)
	}
	if mine.err != nil {
		return http.StatusInternalServerError, mine.err
	}
	out := &wire.PIRReply{Status: res.Status}
	if res.Status == wire.StatusOK {
		out.Share0, out.Sealed1 = mine.b, res.Payload
	}
	writeBin(w, out.Marshal())
	return http.StatusOK, nil
}

func (s *Server) pirKey(b []byte) (*dpf.Key, error) {
	k, err := dpf.Parse(b)
	if err != nil {
		return nil, err
	}
	if k.Party != 0 || k.Bits != s.table.Params().Bits {
		return nil, fmt.Errorf("dpf key for party %d over %d bits: want party 0 over %d", k.Party, k.Bits, s.table.Params().Bits)
	}
	return k, nil
}

// AnswerPIR is the V-server's own work for a private query: its share for DPF key key0
// (what /v1/pir computes beside the relay; benchmarks time it alone).
func (s *Server) AnswerPIR(key0 []byte) ([]byte, error) {
	if s.table == nil {
		return nil, errPIROff
	}
	k, err := s.pirKey(key0)
	if err != nil {
		return nil, err
	}
	return s.table.Answer(k)
}

// handleFetch releases the values of the pair ids a private query found, under the same
// ACLs as a search. Only ids in the private-query table are released: a pair restricted
// to pseudonyms is not in it, so knowing its id (from an earlier authorised search) does
// not get around the K-server's check.
func (s *Server) handleFetch(w http.ResponseWriter, _ *http.Request, user string, body []byte) (int, error) {
	if s.table == nil {
		return http.StatusNotFound, errPIROff
	}
	req, err := wire.ParseFetch(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	var ms []wire.Matched
	err = s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(pir.BucketName)
		for _, id := range req.IDs {
			if b.Get(id[:]) != nil {
				ms = append(ms, wire.Matched{ID: id})
			}
		}
		return nil
	})
	if err != nil {
		return http.StatusInternalServerError, err
	}
	out := &wire.Results{Status: wire.StatusOK}
	if out.Results, err = release(s.db, user, ms); err != nil {
		return http.StatusInternalServerError, err
	}
	writeBin(w, out.Marshal())
	return http.StatusOK, nil
}

// SyncPIR makes this replica equal to the K-server's table: it sends its bucket digests,
// and for every bucket that differs replaces its entries with the K-server's (the
// K-server builds every entry, so it is authoritative). It returns how many buckets it
// repaired. Run at start and after a publication or unpublication the K-server may have
// committed without this server (a crash or a failed relay between the two commits).
func (s *Server) SyncPIR(ctx context.Context) (int, error) {
	if s.table == nil {
		return 0, nil
	}
	total := 0
	for round := 0; round < 8; round++ {
		res, err := s.mix.submit(ctx, wire.RelayItem{Kind: wire.KindPIRSync, Payload: s.table.Digests()})
		if err != nil {
			return total, err
		}
		if res.Status != wire.StatusOK {
			return total, fmt.Errorf("k-server refused the table sync (status %d)", res.Status)
		}
		sync, err := wire.ParsePIRSync(res.Payload)
		if err != nil {
			return total, fmt.Errorf("k-server table sync: %w", err)
		}
		if len(sync.Buckets) == 0 {
			return total, nil
		}
		if err := s.adopt(sync); err != nil {
			return total, err
		}
		total += len(sync.Buckets)
	}
	return total, fmt.Errorf("table sync: still differing after 8 rounds (publications in progress?)")
}

// adopt replaces the entries of the synced buckets with the K-server's, in one transaction.
func (s *Server) adopt(sync *wire.PIRSync) error {
	set := map[uint32]bool{}
	var adds []pir.Change
	for _, b := range sync.Buckets {
		set[b.Index] = true
		for _, e := range b.Entries {
			pe := pir.EntryFrom(e.Entry)
			adds = append(adds, pir.Change{ID: e.ID, Add: &pe})
		}
	}
	_, err := pir.Update(s.db, s.table, func(tx *bbolt.Tx) ([]pir.Change, error) {
		mine, err := pir.InBuckets(tx, s.table.Params(), set)
		for i := range mine {
			mine[i].Add = nil // remove, then add the K-server's
		}
		return append(mine, adds...), err
	})
	if err == nil {
		s.log.Info("private-query table repaired from the k-server", "buckets", len(sync.Buckets))
	}
	return err
}

// syncLoop runs SyncPIR at start (retrying while the K-server is unreachable) and again
// whenever a relay that changes the table failed.
func (s *Server) syncLoop(ctx context.Context) {
	retry := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		case <-s.syncReq:
		}
		if _, err := s.SyncPIR(ctx); err != nil {
			s.log.Warn("private-query table sync", "err", err)
			retry = 2 * time.Second
			continue
		}
		retry = time.Hour
	}
}

// needSync asks syncLoop for a table sync (without blocking).
func (s *Server) needSync() {
	select {
	case s.syncReq <- struct{}{}:
	default:
	}
}
