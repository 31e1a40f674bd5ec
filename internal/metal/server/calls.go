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
	"github.com/veil-project/veil/internal/metal/twopc"
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

// lead is Server 1's loop: announce each job's id, run it if Server 2 has its part.
func (s *Server) lead(ctx context.Context, sess *twopc.Session, p *access.Party) error {
	tick := time.NewTicker(s.cfg.PingInterval)
	defer tick.Stop()
	for {
		var j *job
		select {
		case j = <-s.jobs:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := ping(sess); err != nil {
				return err
			}
			continue
		}
		if err := j.ctx.Err(); err != nil {
			j.done <- result{err: err}
			continue
		}
		err := sess.SendMessage(append([]byte{j.kind}, j.id[:]...))
		var ok []byte
		if err == nil {
			ok, err = sess.ReceiveMessage()
		}
		if err != nil {
			j.done <- result{err: err}
			return err
		}
		if len(ok) != 1 || ok[0] != 1 {
			j.done <- result{err: errMissing}
			continue
		}
		res := s.call(p, j)
		j.done <- res
		if res.err != nil {
			return res.err
		}
	}
}

func ping(sess *twopc.Session) error {
	if err := sess.SendMessage([]byte{kindPing}); err != nil {
		return err
	}
	b, err := sess.ReceiveMessage()
	if err == nil && (len(b) != 1 || b[0] != kindPing) {
		err = errors.New("bad keep-alive answer from server 2")
	}
	return err
}

// follow is Server 2's loop: wait for the announced id's part, say whether it came, run.
func (s *Server) follow(sess *twopc.Session, p *access.Party) error {
	for {
		msg, err := sess.ReceiveMessage()
		if err != nil {
			return err
		}
		if len(msg) == 1 && msg[0] == kindPing {
			if err := sess.SendMessage(msg); err != nil {
				return err
			}
			continue
		}
		if len(msg) != 1+idLen || kindNames[msg[0]] == "" {
			return errors.New("bad announcement from server 1")
		}
		var id [idLen]byte
		copy(id[:], msg[1:])
		j := s.pend.take(id, s.cfg.PairTimeout)
		if j == nil || j.kind != msg[0] {
			if j != nil {
				j.done <- result{err: errMissing}
			}
			if err := sess.SendMessage([]byte{0}); err != nil {
				return err
			}
			continue
		}
		if err := sess.SendMessage([]byte{1}); err != nil {
			j.done <- result{err: err}
			return err
		}
		res := s.call(p, j)
		j.done <- res
		if res.err != nil {
			return res.err
		}
	}
}

// pending holds Server 2's client parts by request id until Server 1 announces them.
type pending struct {
	mu     sync.Mutex
	m      map[[idLen]byte]*job
	notify chan struct{}
}

func newPending() *pending {
	return &pending{m: map[[idLen]byte]*job{}, notify: make(chan struct{})}
}

func (p *pending) put(j *job) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.m[j.id]; dup {
		return errors.New("a request with this id is already waiting")
	}
	p.m[j.id] = j
	close(p.notify)
	p.notify = make(chan struct{})
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

func (p *pending) take(id [idLen]byte, timeout time.Duration) *job {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		p.mu.Lock()
		if j, ok := p.m[id]; ok {
			delete(p.m, id)
			p.mu.Unlock()
			return j
		}
		ch := p.notify
		p.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			return nil
		}
	}
}
