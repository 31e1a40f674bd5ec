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

// Server 2's answers to an announcement.
const (
	answerSkip   = 0 // a part with this id, but of another kind: the call is skipped
	answerRun    = 1 // the part is here: both run the call
	answerNotYet = 2 // no part with this id (yet): Server 1 asks again later
)

// Retries of an announcement Server 2 answered answerNotYet: the first after
// retryFirst, each later one after twice the previous pause, at most retryMax.
const (
	retryFirst = 5 * time.Millisecond
	retryMax   = 500 * time.Millisecond
)

// deferred is a job whose part had not reached Server 2 when announced.
type deferred struct {
	j     *job
	until time.Time     // give up then (PairTimeout after the first announcement)
	next  time.Time     // announce it again then
	pause time.Duration // the pause before next
}

// lead is Server 1's loop: announce each job's id, run it if Server 2 has its part. A job
// whose part has not reached Server 2 is announced again later while the loop goes on
// with other jobs, so a client that sends only Server 1 its part holds up nobody (Server
// 2 used to wait for the part, up to PairTimeout, with every call behind it).
func (s *Server) lead(ctx context.Context, sess *twopc.Session, p *access.Party) (err error) {
	tick := time.NewTicker(s.cfg.PingInterval)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	var later []*deferred
	defer func() { // the link is gone: so are the deferred jobs' chances
		for _, d := range later {
			d.j.done <- result{err: err}
		}
	}()
	for {
		var d *deferred
		if i := nextDue(later); i >= 0 {
			retry.Reset(time.Until(later[i].next))
		} else {
			retry.Stop()
		}
		select {
		case j := <-s.jobs:
			d = &deferred{j: j, until: time.Now().Add(s.cfg.PairTimeout), pause: retryFirst}
		case <-retry.C:
			i := nextDue(later)
			if i < 0 || time.Now().Before(later[i].next) {
				continue
			}
			d = later[i]
			later = append(later[:i], later[i+1:]...)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := ping(sess); err != nil {
				return err
			}
			continue
		}
		j := d.j
		if err := j.ctx.Err(); err != nil {
			j.done <- result{err: err}
			continue
		}
		err = sess.SendMessage(append([]byte{j.kind}, j.id[:]...))
		var ok []byte
		if err == nil {
			ok, err = sess.ReceiveMessage()
		}
		if err != nil {
			j.done <- result{err: err}
			return err
		}
		switch {
		case len(ok) == 1 && ok[0] == answerNotYet && time.Now().Add(d.pause).Before(d.until):
			d.next = time.Now().Add(d.pause)
			d.pause = min(2*d.pause, retryMax)
			later = append(later, d)
			continue
		case len(ok) != 1 || ok[0] != answerRun:
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

// nextDue is the index of the deferred job to announce first, or -1.
func nextDue(later []*deferred) int {
	best := -1
	for i, d := range later {
		if best < 0 || d.next.Before(later[best].next) {
			best = i
		}
	}
	return best
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

// follow is Server 2's loop: say at once whether the announced id's part is here, run.
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
		j := s.pend.take(id)
		if j == nil || j.kind != msg[0] {
			answer := byte(answerNotYet)
			if j != nil {
				j.done <- result{err: errMissing}
				answer = answerSkip
			}
			if err := sess.SendMessage([]byte{answer}); err != nil {
				return err
			}
			continue
		}
		if err := sess.SendMessage([]byte{answerRun}); err != nil {
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
