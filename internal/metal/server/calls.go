package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
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
	j := &job{kind: kind, part: body[idLen:], ctx: r.Context(), done: make(chan result, 1)}
	copy(j.id[:], body)
	res, status := s.submit(r.Context(), j)
	if status != 0 {
		http.Error(w, res.err.Error(), status)
		return nil, false
	}
	s.m.calls.WithLabelValues(kindNames[kind], resultName(res.err)).Inc()
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
func (s *Server) submit(ctx context.Context, j *job) (result, int) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	if s.role == 1 {
		select {
		case s.jobs <- j:
			return <-j.done, 0
		case <-ctx.Done():
			return result{err: errors.New("server 2 is unreachable or the queue is too long (try again)")}, http.StatusServiceUnavailable
		}
	}
	if err := s.pend.put(j); err != nil {
		return result{err: err}, http.StatusConflict
	}
	select {
	case res := <-j.done:
		return res, 0
	case <-ctx.Done():
		if s.pend.remove(j) {
			return result{err: errors.New("server 1 never announced this request (send both parts, same id)")}, http.StatusServiceUnavailable
		}
		return <-j.done, 0
	}
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

// pending holds Server 2's client parts by request id until Server 1 announces them.
type pending struct {
	mu sync.Mutex
	m  map[[idLen]byte]*job
}

func newPending() *pending {
	return &pending{m: map[[idLen]byte]*job{}}
}

func (p *pending) put(j *job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.m[j.id]; dup {
		return errors.New("a request with this id is already waiting")
	}
	p.m[j.id] = j
	return nil
}

func (p *pending) remove(j *job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[j.id] == j {
		delete(p.m, j.id)
		return true
	}
	return false
}

// take removes and returns the part with this id, or nil if none is here.
func (p *pending) take(id [idLen]byte) *job {
	p.mu.Lock()
	defer p.mu.Unlock()
	j := p.m[id]
	delete(p.m, id)
	return j
}
