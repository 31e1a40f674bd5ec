package server

import (
	"context"
	"errors"
	"time"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Pairing on Server 1 (docs/formats/metal-server.md "The 2PC link"): each job's id is
// announced to Server 2 as it comes (with link version 2, the jobs that came meanwhile
// together, in one query); a job whose part has not reached Server 2 yet waits, and
// Server 1 asks about all waiting jobs at once, in one query per poll, so the link's cost
// of pairing does not grow with the number of parts sent to Server 1 only. With a
// version-1 Server 2 it announces each new or waiting job on its own instead.

// Retries of a job Server 2 answered answerNotYet: the first after retryFirst, each later
// one after twice the previous pause, at most retryMax. With queries, two polls are also
// pollShare times the last poll's round trip apart (at least retryFirst, at most
// retryMax), so polling takes at most about 1/pollShare of the link's time whatever the
// flood (on a link whose round trip is under retryMax/pollShare = 50 ms; one poll per
// retryMax on slower ones).
const (
	retryFirst = 5 * time.Millisecond
	retryMax   = 500 * time.Millisecond
	pollShare  = 10
	maxAsk     = 4096 // ids in one query (69 KB)
)

// deferred is a job whose part had not reached Server 2 when announced.
type deferred struct {
	j     *job
	until time.Time     // give up then (PairTimeout after the first announcement)
	next  time.Time     // ask about it again then
	pause time.Duration // the pause before next
}

// waiting is Server 1's set of deferred jobs.
type waiting struct {
	jobs    []*deferred
	query   bool          // Server 2 takes queries (link version 2)
	gap     time.Duration // with queries: the least pause between two polls
	lastEnd time.Time     // with queries: when the last poll's answer came
}

// due is when to wake next: to ask about waiting jobs, or at the first pair timeout if
// that comes before; false if none is waiting.
func (w *waiting) due() (time.Time, bool) {
	if len(w.jobs) == 0 {
		return time.Time{}, false
	}
	t := w.pollAt()
	for _, d := range w.jobs {
		if d.until.Before(t) {
			t = d.until
		}
	}
	return t, true
}

// pollAt is when to ask about waiting jobs next (there are some).
func (w *waiting) pollAt() time.Time {
	t := w.jobs[0].next
	for _, d := range w.jobs[1:] {
		if d.next.Before(t) {
			t = d.next
		}
	}
	if w.query && t.Before(w.lastEnd.Add(w.gap)) {
		t = w.lastEnd.Add(w.gap)
	}
	return t
}

// expire answers the jobs whose pair timeout is past at now (their part never reached
// Server 2 while they were asked about), without asking again: the answer comes at the
// pair timeout, not at the next poll (up to retryMax later).
func (w *waiting) expire(now time.Time) {
	keep := w.jobs[:0]
	for _, d := range w.jobs {
		if now.Before(d.until) {
			keep = append(keep, d)
		} else {
			d.j.done <- result{err: errMissing}
		}
	}
	clear(w.jobs[len(keep):])
	w.jobs = keep
}

// take removes and returns the jobs to ask about now: all of them with queries, else the
// one due first.
func (w *waiting) take() []*deferred {
	if w.query {
		n := min(len(w.jobs), maxAsk)
		ds := w.jobs[:n:n]
		w.jobs = w.jobs[n:]
		return ds
	}
	best := 0
	for i, d := range w.jobs {
		if d.next.Before(w.jobs[best].next) {
			best = i
		}
	}
	d := w.jobs[best]
	w.jobs = append(w.jobs[:best], w.jobs[best+1:]...)
	return []*deferred{d}
}

// again keeps d waiting after a not-yet answer at now; false once its pair timeout is past.
// A next ask after the pair timeout does not end it early: expire answers it then.
func (w *waiting) again(d *deferred, now time.Time) bool {
	if !now.Before(d.until) {
		return false
	}
	d.next = now.Add(d.pause)
	d.pause = min(2*d.pause, retryMax)
	w.jobs = append(w.jobs, d)
	return true
}

// trim answers the jobs that waited longest while more than max wait, so requests whose
// other part never comes, from however many addresses, hold at most max connections. Jobs
// whose client is gone (they hold no connection) go first.
func (w *waiting) trim(max int) {
	if len(w.jobs) <= max {
		return
	}
	live := w.jobs[:0]
	for _, d := range w.jobs {
		if err := d.j.ctx.Err(); err != nil {
			d.j.done <- result{err: err}
		} else {
			live = append(live, d)
		}
	}
	clear(w.jobs[len(live):])
	w.jobs = live
	for len(w.jobs) > max {
		old := 0
		for i, d := range w.jobs {
			if d.until.Before(w.jobs[old].until) {
				old = i
			}
		}
		w.jobs[old].j.done <- result{err: crowded{1}}
		w.jobs = append(w.jobs[:old], w.jobs[old+1:]...)
	}
}

// lead is Server 1's loop: announce each job's id as it comes, run it if Server 2 has its
// part, else keep it waiting and go on with other jobs, so a client that sends only Server
// 1 its part holds up nobody.
func (s *Server) lead(ctx context.Context, sess *twopc.Session, p *access.Party, query bool) (err error) {
	tick := time.NewTicker(s.cfg.PingInterval)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	w := &waiting{query: query}
	defer func() { // the link is gone: so are the waiting jobs' chances
		for _, d := range w.jobs {
			d.j.done <- result{err: s.stopping(ctx, s.silent(err))}
		}
	}()
	for {
		if t, ok := w.due(); ok {
			retry.Reset(time.Until(t))
		} else {
			retry.Stop()
		}
		var ds []*deferred
		again := false
		select {
		case j := <-s.jobs:
			ds = s.arrivals(j, query)
		case <-retry.C:
			now := time.Now()
			w.expire(now)
			if len(w.jobs) == 0 || now.Before(w.pollAt()) {
				continue
			}
			ds, again = w.take(), true
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if err := ping(sess); err != nil {
				return err
			}
			continue
		}
		if err := s.ask(ctx, sess, p, w, ds, query && (again || len(ds) > 1), query && again); err != nil {
			return err
		}
	}
}

// arrivals is j and, with queries, every other job already handed to the loop (at most
// maxAsk): new jobs are asked about together, one round trip for all, however many come.
func (s *Server) arrivals(j *job, query bool) []*deferred {
	until := time.Now().Add(s.cfg.PairTimeout)
	ds := []*deferred{{j: j, until: until, pause: retryFirst}}
	for query && len(ds) < maxAsk {
		select {
		case j := <-s.jobs:
			ds = append(ds, &deferred{j: j, until: until, pause: retryFirst})
		default:
			return ds
		}
	}
	return ds
}

// ask asks Server 2 about ds (an announcement of one job, or a query about several), runs
// the calls whose parts are there in order, and keeps the others waiting until their pair
// timeout. Every job of ds is answered or back in w when it returns. A poll (a query about
// waiting jobs) sets the pause before the next one; a query about new jobs does not, so
// new jobs coming all the time do not hold back the waiting ones' next poll.
func (s *Server) ask(ctx context.Context, sess *twopc.Session, p *access.Party, w *waiting, ds []*deferred, query, poll bool) error {
	live := ds[:0]
	for _, d := range ds {
		if err := d.j.ctx.Err(); err != nil { // the client is gone
			d.j.done <- result{err: err}
		} else {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return nil
	}
	as := make([]announce, len(live))
	for i, d := range live {
		as[i] = announce{kind: d.j.kind, id: d.j.id}
	}
	msg := as[0].marshal()
	if query {
		msg = marshalQuery(as)
	}
	start := time.Now()
	err := sess.SendMessage(msg)
	var answers []byte
	if err == nil {
		answers, err = sess.ReceiveMessage()
	}
	if err == nil {
		err = checkAnswers(answers, len(live))
	}
	if err != nil {
		for _, d := range live {
			d.j.done <- result{err: s.stopping(ctx, s.silent(err))}
		}
		return err
	}
	now := time.Now()
	if poll {
		w.lastEnd, w.gap = now, min(max(retryFirst, pollShare*now.Sub(start)), retryMax)
	}
	var run []*job
	for i, d := range live {
		switch answers[i] {
		case answerRun:
			run = append(run, d.j)
		case answerNotYet:
			if !w.again(d, now) {
				d.j.done <- result{err: errMissing}
			}
		default:
			d.j.done <- result{err: errMissing}
		}
	}
	w.trim(s.maxHalves())
	return s.runAll(ctx, p, run)
}

// runAll runs the jobs' calls in order. A failed call closes the link: the jobs after it
// get its error.
func (s *Server) runAll(ctx context.Context, p *access.Party, run []*job) error {
	defer s.boundLink(time.Time{})
	for i, j := range run {
		s.boundLink(time.Now().Add(s.cfg.CallTimeout))
		res := s.call(p, j)
		if res.err != nil {
			res.err = s.stopping(ctx, s.silent(res.err))
		}
		j.done <- res
		if res.err != nil {
			for _, k := range run[i+1:] {
				k.done <- result{err: res.err}
			}
			return res.err
		}
	}
	return nil
}

// boundLink bounds the running link's reads and writes until t (a call), or with the zero
// time returns them to the bound between calls.
func (s *Server) boundLink(t time.Time) {
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c != nil {
		c.bound(t)
	}
}

// stopping is err, or the shutdown's error if the link failed because this server is
// shutting down (it closes the link).
func (s *Server) stopping(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return s.errShutdown()
	}
	return err
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
