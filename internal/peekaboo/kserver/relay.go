package kserver

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

const (
	statusStale    = wire.StatusStale
	statusReplay   = wire.StatusReplay
	statusInternal = wire.StatusInternal
)

var kindNames = map[uint8]string{wire.KindQuery: "query", wire.KindPublish: "publish", wire.KindUnpublish: "unpublish", wire.KindPIR: "pir", wire.KindPIRSync: "pirsync"}

func (s *Server) handleRelay(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "relay needs the V-server's client certificate", http.StatusUnauthorized)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		http.Error(w, "read relay batch: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	if s.cfg.TestTap != nil {
		s.cfg.TestTap(r, body)
	}
	req, err := wire.ParseRelay(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	start := time.Now()
	resp := s.Process(req)
	s.m.batch.Observe(float64(len(req.Items)))
	s.m.latency.Observe(time.Since(start).Seconds())
	s.m.pairs.Set(float64(s.idx.Len()))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(resp.Marshal())
}

// Process answers a relay batch item for item, opening up to Workers items at once.
func (s *Server) Process(req *wire.Relay) *wire.RelayResp {
	out := make([]wire.RelayResult, len(req.Items))
	sem := make(chan struct{}, s.cfg.Workers)
	var wg sync.WaitGroup
	for i := range req.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			it := &req.Items[i]
			out[i] = s.item(it)
			s.m.items.WithLabelValues(kindNames[it.Kind], strconv.Itoa(int(out[i].Status))).Inc()
		}()
	}
	wg.Wait()
	return &wire.RelayResp{Results: out}
}

func (s *Server) item(it *wire.RelayItem) wire.RelayResult {
	var payload []byte
	var err error
	switch it.Kind {
	case wire.KindQuery:
		var st uint8
		payload, st = s.query(it.Payload)
		if st != wire.StatusOK {
			return wire.RelayResult{Status: st}
		}
	case wire.KindPIR:
		var st uint8
		payload, st = s.pirQuery(it.Payload)
		if st != wire.StatusOK {
			return wire.RelayResult{Status: st}
		}
	case wire.KindPIRSync:
		payload, err = s.pirSync(it.Payload)
	case wire.KindPublish:
		payload, err = s.publish(it.Payload)
	case wire.KindUnpublish:
		payload, err = s.unpublish(it.Payload)
	}
	if err != nil {
		return wire.RelayResult{Status: statusOf(err)}
	}
	return wire.RelayResult{Payload: payload}
}

func statusOf(err error) uint8 {
	switch {
	case errors.Is(err, wire.ErrOpen):
		return wire.StatusNotOpened
	case errors.Is(err, wire.ErrMalformed):
		return wire.StatusMalformed
	}
	return wire.StatusInternal
}

// query opens a sealed query, checks freshness, and looks it up.
func (s *Server) query(sealed []byte) ([]byte, uint8) {
	q, err := wire.OpenQuery(s.key, sealed)
	if err != nil {
		return nil, statusOf(err)
	}
	if st := s.fresh(q.Nonce, q.Time, false); st != 0 {
		return nil, st
	}
	hits := Lookup(s.idx, q)
	ms := make([]wire.Matched, 0, len(hits))
	nonces := make(map[[12]byte]bool, len(hits))
	for _, h := range hits {
		// A record's nonce is id[:12]: never seal two under one (publication refuses such
		// ids; this guards state stored before it did).
		if n := [12]byte(h.ID[:12]); !nonces[n] {
			nonces[n] = true
			key := ""
			if q.Advanced {
				key = h.Key
			}
			ms = append(ms, wire.Matched{ID: h.ID, Record: wire.SealMatch(q, h.ID, key)})
		}
	}
	return wire.MarshalMatches(ms), wire.StatusOK
}

// Lookup runs an opened query against idx: exact or substring, pairs restricted to
// pseudonyms only when the query proves one of them.
func Lookup(idx *index.Index, q *wire.Query) []index.Hit {
	var allow index.Allow
	if held := q.Verified(); len(held) > 0 {
		allow = func(ps [][32]byte) bool {
			for _, p := range ps {
				if slices.Contains(held, p) {
					return true
				}
			}
			return false
		}
	}
	if q.Mode == wire.ModeExact {
		return idx.Exact(q.Text, int(q.Limit), allow)
	}
	return idx.Substring(q.Text, int(q.Limit), allow)
}

func (s *Server) publish(payload []byte) ([]byte, error) {
	c, err := wire.ParseChunk(payload)
	if err != nil {
		return nil, err
	}
	items, err := wire.OpenChunk(s.key, c)
	if err != nil {
		return nil, err
	}
	entries, err := s.store(items)
	if err != nil {
		s.log.Error("store publication", "err", err)
		return nil, err
	}
	return (&wire.PublishAck{N: uint32(len(items)), Entries: entries}).Marshal(), nil
}

func (s *Server) unpublish(payload []byte) ([]byte, error) {
	ids, err := wire.ParseIDs(payload)
	if err != nil {
		return nil, err
	}
	n, err := s.remove(ids.IDs)
	if err != nil {
		s.log.Error("remove pairs", "err", err)
		return nil, err
	}
	return wire.MarshalN(uint32(n)), nil
}

// fresh runs the replay check and logs why a query was refused (at most one line per
// ratelog.DefaultEvery, with the number of refusals not logged since).
func (s *Server) fresh(nonce [16]byte, stamp uint64, private bool) uint8 {
	st, err := s.replay.verdict(nonce, stamp, s.cfg.now(), private)
	if st == 0 {
		return 0
	}
	if ok, held := s.refusals.Due(); ok {
		s.log.Warn("query refused", "status", st, "reason", err.Error(), "unlogged_refusals", held)
	}
	return st
}
