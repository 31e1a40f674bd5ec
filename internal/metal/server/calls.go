package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/access"
)

const (
	kindAccount = 'C'
	kindAccess  = 'A'
	kindPing    = 'P' // Server 1's keep-alive while idle: a dead link is noticed before a call
	idLen       = 16
)

var kindNames = map[byte]string{kindAccount: "account", kindAccess: "access"}

type result struct {
	out []byte
	err error
}

// job is one client request waiting for its call.
type job struct {
	kind byte
	id   [idLen]byte
	part []byte
	ctx  context.Context
	done chan result
	from origin        // where the client's request came from, as counted by waiters
	free time.Duration // Server 2: the pending clock when the part came
}

func (s *Server) partLen(kind byte) int {
	switch {
	case kind == kindAccount:
		return 0
	case kind == kindEnroll || kind == kindSend || kind == kindList:
		return sharePartLen(kind)
	case s.role == 1:
		return ac.RequestLen + s.params.CTSize()
	default:
		return ac.RequestLen
	}
}

func (s *Server) handleCall(kind byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if out, ok := s.runCall(w, r, kind); ok {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(out)
		}
	}
}

// runCall reads a client's part of a call of this kind, runs the call and returns its
// output; on a failure it answers the client itself and returns false.
func (s *Server) runCall(w http.ResponseWriter, r *http.Request, kind byte) ([]byte, bool) {
	want := idLen + s.partLen(kind)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(want)))
	if s.cfg.TestTap != nil {
		s.cfg.TestTap(r.URL.Path, body)
	}
	if err != nil || len(body) != want {
		if kind == kindList {
			http.Error(w, errListAuth, http.StatusUnauthorized)
		} else {
			http.Error(w, "request body is not a Metal request for this deployment (wrong size)", http.StatusBadRequest)
		}
		return nil, false
	}
	if kind == kindAccess && s.role == 1 {
		if err := access.CheckUserBlock(s.params, body[idLen+ac.RequestLen:]); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return nil, false
		}
	}
	j := &job{kind: kind, part: body[idLen:], ctx: r.Context(), done: make(chan result, 1), from: clientOf(r.RemoteAddr)}
	copy(j.id[:], body)
	// A refused or failed request closes its connection: one that never gets its other part
	// leaves no idle connection behind (they would take the server's connections as well).
	if full := s.wait.enter(j.from); full != "" {
		w.Header().Set("Connection", "close")
		from, most := "this address", s.cfg.MaxWaitingPerAddr
		if full == fullSite {
			from, most = "this network (the IPv6 /48 of this address)", s.cfg.MaxWaitingPerSite
		}
		http.Error(w, fmt.Sprintf("too many requests from %s are waiting for their turn or their other part (at most %d): wait for their answers", from, most), http.StatusTooManyRequests)
		return nil, false
	}
	defer s.wait.leave(j.from)
	res, status := s.submit(r.Context(), j)
	if status != 0 || res.err != nil {
		w.Header().Set("Connection", "close")
	}
	if status != 0 {
		// The client library retries these (the call never ran), under a new id.
		if errors.As(res.err, new(unreachable)) {
			w.Header().Set("Retry-After", s.retryAfter())
		} else if errors.As(res.err, new(shuttingDown)) {
			w.Header().Set("Retry-After", "1") // a restart takes a few seconds
		}
		http.Error(w, res.err.Error(), status)
		return nil, false
	}
	s.m.calls.WithLabelValues(kindNames[kind], resultName(res.err)).Inc()
	if errors.As(res.err, new(crowded)) {
		w.Header().Set("Retry-After", "1") // the client library retries it (it never ran)
	}
	switch {
	case errors.Is(res.err, errMissing):
		http.Error(w, res.err.Error(), http.StatusConflict)
	case res.err != nil:
		http.Error(w, "metal call failed: "+res.err.Error(), http.StatusServiceUnavailable)
	default:
		return res.out, true
	}
	return nil, false
}

// submit hands j to the call loop (Server 1: in arrival order; Server 2: for Server 1's
// announcement of its id) and waits for its result. A non-zero status means j never ran.
// Once the server is shutting down, a job not yet running is answered at once.
func (s *Server) submit(ctx context.Context, j *job) (result, int) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if s.role == 1 {
		select {
		case <-s.reach.state():
			return result{err: s.errUnreachable()}, http.StatusServiceUnavailable
		default:
		}
		select {
		case s.jobs <- j:
			return <-j.done, 0
		case <-s.quit:
			return result{err: s.errShutdown()}, http.StatusServiceUnavailable
		case <-s.reach.state():
			return result{err: s.errUnreachable()}, http.StatusServiceUnavailable
		case <-ctx.Done():
			return result{err: errors.New("server 2 is unreachable or the queue is too long (try again)")}, http.StatusServiceUnavailable
		}
	}
	if err := s.pend.put(j, s.maxHalves()); err != nil {
		return result{err: err}, http.StatusConflict
	}
	for {
		left := s.pend.left(j, s.cfg.PairTimeout)
		if left <= 0 {
			if s.pend.remove(j) {
				return result{err: fmt.Errorf("server 1 did not announce this request within %v (counted while no call ran): did its part reach server 1? (send both parts, same id)", s.cfg.PairTimeout)}, http.StatusConflict
			}
			return <-j.done, 0
		}
		t := time.NewTimer(left)
		select {
		case res := <-j.done:
			t.Stop()
			return res, 0
		case <-t.C:
			continue
		case <-s.quit:
			t.Stop()
			if s.pend.remove(j) {
				return result{err: s.errShutdown()}, http.StatusServiceUnavailable
			}
		case <-ctx.Done():
			t.Stop()
			if s.pend.remove(j) {
				return result{err: errors.New("server 1 never announced this request (send both parts, same id)")}, http.StatusServiceUnavailable
			}
		}
		return <-j.done, 0 // Server 1 announced it meanwhile: it runs
	}
}

// shuttingDown is the answer to a request not yet in a call when the server is told to
// stop: 503, with Retry-After when the call never ran (runCall), which the client library
// retries for a while (a restart). A call the shutdown cut gets it as its failure, without
// the header.
type shuttingDown struct{ error }

func (s *Server) errShutdown() error {
	return shuttingDown{fmt.Errorf("metal server %d is shutting down (try again)", s.role)}
}

func resultName(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errMissing):
		return "missing"
	}
	return "error"
}

// call runs one call on the link and times it.
func (s *Server) call(p *access.Party, j *job) result {
	if j.kind == kindEnroll || j.kind == kindSend || j.kind == kindList {
		return s.callShare(j)
	}
	start := time.Now()
	var out []byte
	var err error
	if j.kind == kindAccount {
		var c, f []byte
		if c, f, err = p.CreateAccount(); err == nil {
			out = append(c, f...)
		}
	} else {
		req, user := j.part, []byte(nil)
		if s.role == 1 {
			req, user = j.part[:ac.RequestLen], j.part[ac.RequestLen:]
		}
		var rep access.Reply
		if rep, err = p.Access(req, user); err == nil {
			out = rep.Marshal()
			s.mu.Lock()
			s.last = p.LastTimings()
			s.mu.Unlock()
		}
	}
	s.m.seconds.WithLabelValues(kindNames[j.kind]).Observe(time.Since(start).Seconds())
	return result{out: out, err: err}
}
