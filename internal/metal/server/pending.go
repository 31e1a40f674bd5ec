package server

import (
	"errors"
	"sync"
	"time"
)

// pending holds Server 2's client parts by request id until Server 1 announces them.
//
// Its clock counts time outside calls and outside a link's set-up: while the link is up
// between calls, Server 1's loop is free to take the jobs clients sent it and announces
// each within a round trip, and while there is no link Server 1 holds no job it could
// announce later (it answers every request 503 while it cannot reach Server 2; only its
// first attempt after a start queues them, and that attempt reaches this server within
// its 10 s dial bound, or fails and they get 503). So a part that waited the pair timeout
// on this clock has no announcement coming (its other part never reached Server 1, or
// Server 1 gave up on it) and is answered instead of being kept for the call timeout.
// While a call runs or a link is being set up, Server 1 may hold its twin in its queue,
// and the clock stops. (Until session 17 it stopped while there was no link too, so a
// part sent to Server 2 alone then waited the call timeout.)
type pending struct {
	mu    sync.Mutex
	m     map[[idLen]byte]*job
	free  time.Duration // the clock, counted up to since
	since time.Time     // when the clock last started; zero while it is stopped
}

func newPending() *pending {
	return &pending{m: map[[idLen]byte]*job{}, since: time.Now()} // no link yet: the clock runs
}

// clock is the time outside calls and set-ups so far; p.mu is held.
func (p *pending) clock() time.Duration {
	if p.since.IsZero() {
		return p.free
	}
	return p.free + time.Since(p.since)
}

// run starts (true) or stops the clock.
func (p *pending) run(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = p.clock()
	p.since = time.Time{}
	if on {
		p.since = time.Now()
	}
}

// left is how much longer j may wait, on the clock, for a pair timeout of limit.
func (p *pending) left(j *job, limit time.Duration) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return limit - (p.clock() - j.free)
}

// put adds j; if max parts wait then, it answers the one that waited longest on the clock,
// so parts whose announcement never comes, from however many addresses, hold at most max
// connections.
func (p *pending) put(j *job, max int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.m[j.id]; dup {
		return errors.New("a request with this id is already waiting")
	}
	if len(p.m) >= max {
		var old *job
		for _, k := range p.m {
			if old == nil || k.free < old.free {
				old = k
			}
		}
		delete(p.m, old.id)
		old.done <- result{err: crowded{2}}
	}
	j.free = p.clock()
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
