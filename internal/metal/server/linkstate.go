package server

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// How long the 2PC link may be silent, and what Server 1's queue does while it is down
// (docs/design-metal.md "When the other server is gone").
//
// Every read and write on the link has a deadline. Outside calls Server 2 answers at once
// (a ping, an announcement, a query), so on Server 1 each must complete within the pair
// timeout. A call, and the link's set-up (both servers load their state, then the base
// OTs), may keep a server silent while the other computes, so each must end within the call
// timeout as a whole. Server 2 sets no deadline between calls: Server 1 may have nothing to
// say for a while, and a Server 1 that vanished and comes back dials a new link, which
// replaces the silent one (handlePeer).

// bound sets the link's deadlines: until t for every read and write (a call, the set-up);
// the zero time for "each within quiet" (zero quiet: none).
func (c *conn) bound(t time.Time) {
	c.mu.Lock()
	c.until = t
	c.mu.Unlock()
}

// deadline is when the read or write starting now must end (zero: never).
func (c *conn) deadline() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.until.IsZero() || c.quiet <= 0 {
		return c.until
	}
	return time.Now().Add(c.quiet)
}

func (c *conn) Read(p []byte) (int, error) {
	if c.r.Buffered() == 0 {
		c.Conn.SetReadDeadline(c.deadline())
	}
	n, err := c.r.Read(p)
	return n, c.cutBy(err)
}

func (c *conn) Write(p []byte) (int, error) {
	c.Conn.SetWriteDeadline(c.deadline())
	n, err := c.Conn.Write(p)
	return n, c.cutBy(err)
}

// cut closes the link because of why (the liveness probe: Server 2 went silent); the
// link's reads and writes then fail with why.
func (c *conn) cut(why error) {
	c.mu.Lock()
	c.why = why
	c.mu.Unlock()
	c.Conn.Close()
}

// cutBy is err, or why the link was cut if it was.
func (c *conn) cutBy(err error) error {
	if err == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.why != nil {
		return c.why
	}
	return err
}

// silent says what a link error means to a client: the other server went silent (the
// liveness probe cut the link) or stopped answering (a deadline passed), or the link broke.
func (s *Server) silent(err error) error {
	var sp silentPeer
	if errors.As(err, &sp) {
		return sp // one line, without the layers that wrapped it
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("metal server %d stopped answering on the 2PC link (nothing within the pair timeout %v between calls, or a call not done within the call timeout %v): link closed", 3-s.role, s.cfg.PairTimeout, s.cfg.CallTimeout)
}

// reach is Server 1's view of whether Server 2 can be reached: down is closed once an
// attempt to reach it failed or the link broke, and replaced by an open channel when an
// attempt reached it again (the link's set-up follows). Requests waiting for their turn are answered at once while it is
// closed, instead of waiting for the call timeout (5 min) in a queue nobody takes from.
// Before the first attempt ends it is open: requests wait for it.
type reach struct {
	mu   sync.Mutex
	down chan struct{}
	why  error
}

func newReach() *reach { return &reach{down: make(chan struct{})} }

// lost records that Server 2 cannot be reached (err: why).
func (r *reach) lost(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.why = err
	select {
	case <-r.down:
	default:
		close(r.down)
	}
}

// found records that Server 2 answered the link's upgrade.
func (r *reach) found() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.down:
		r.down, r.why = make(chan struct{}), nil
	default:
	}
}

// state is the channel closed while Server 2 is unreachable.
func (r *reach) state() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.down
}

// unreachable is the answer to a request that came or waited while Server 2 could not be
// reached: 503 with Retry-After (runCall), which the client library retries for a while.
type unreachable struct{ error }

// errUnreachable is the answer to a request that came or waited while Server 2 could not
// be reached.
func (s *Server) errUnreachable() error {
	s.reach.mu.Lock()
	why := s.reach.why
	s.reach.mu.Unlock()
	return unreachable{fmt.Errorf("metal server 1 cannot reach server 2 (%v); it keeps trying every %v: try again", why, s.cfg.RedialInterval)}
}

// retryAfter is Retry-After's value for an unreachable answer: the redial interval, in
// whole seconds, at least 1.
func (s *Server) retryAfter() string {
	return strconv.Itoa(max(1, int((s.cfg.RedialInterval+time.Second-1)/time.Second)))
}
