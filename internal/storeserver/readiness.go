package storeserver

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Readiness (GET /readyz, session 16): /healthz answers as long as the process serves
// (liveness), so a load balancer kept sending requests to a node whose metadata database
// was down, each answered 503. /readyz answers 503 naming the parts the node cannot reach
// (the metadata database: a ping bounded by the probe timeout; the blob store: its
// breaker, which the probe loop keeps current), so the node can be taken out of rotation.
// It needs no credential: the answer names the parts, never the causes (which carry host
// and user names); the causes go to the node's log, once per change. One check serves every caller for
// readyCache, so unauthenticated callers cannot make the node ping its database faster.

const readyCache = time.Second

type readiness struct {
	mu   sync.Mutex
	at   time.Time
	down []string
}

// unreachable names the parts this node cannot reach now (nil: ready).
func (s *Service) unreachable(ctx context.Context) []string {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	if !s.ready.at.IsZero() && time.Since(s.ready.at) < readyCache {
		return s.ready.down
	}
	var down []string
	var causes []any
	pctx, cancel := context.WithTimeout(ctx, s.cfg.ProbeTimeout)
	err := s.meta.ping(pctx)
	cancel()
	if err != nil {
		down, causes = append(down, "metadata database"), append(causes, "metadata_err", err)
	}
	if s.br != nil {
		if open, cause := s.br.state(); open {
			down, causes = append(down, "blob store"), append(causes, "blob_err", cause)
		}
	}
	if !slices.Equal(down, s.ready.down) { // a line per change, not per check
		if len(down) > 0 {
			s.cfg.Logger.Warn("not ready: "+strings.Join(down, ", ")+" unreachable", causes...)
		} else if !s.ready.at.IsZero() {
			s.cfg.Logger.Info("ready again")
		}
	}
	s.ready.at, s.ready.down = time.Now(), down
	return down
}

func (s *Service) handleReady(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if down := s.unreachable(r.Context()); len(down) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("unreachable: " + strings.Join(down, ", ") + "\n"))
		return
	}
	w.Write([]byte("ready\n"))
}
