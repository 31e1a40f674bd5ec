package ksclient

import (
	"fmt"
	"time"
)

// DelayedError: the key server is in a delay mode (fixed or exponential delay: it answers
// one query of a client at a time, each after a delay) and this client gave up before an
// answer came. Its attempts ran past its timeout, or the key server refused them because
// another query of this client was still being delayed (often the client's own attempt
// that had timed out). It is the key server's rate limit (errors.Is ErrRateLimited), not a
// key server that is down; until session 17 it read "key server rate limit reached (a
// query of this client is already in flight)", or "key server unavailable".
//
// Over UDP a key server drops a query while another of the client's is in flight without
// answering, so the client cannot tell a delay from a key server that is down: there it
// is ErrKSUnavailable, unless an HTTPS refusal taught the client the delay.
type DelayedError struct {
	Timeout  time.Duration // the client's timeout per attempt (Options.Timeout, t_R)
	Attempts int           // the attempts its patience allowed (Options.Retries)
	Waited   time.Duration // from the request's first attempt to giving up
}

func (e *DelayedError) Error() string {
	return fmt.Sprintf("key server delayed its answer past this client's timeout (%v per attempt, %d attempts, gave up after %v): "+
		"it answers one query of a client at a time, each after a delay (a delay-mode rate limit)",
		e.Timeout, e.Attempts, e.Waited.Round(time.Millisecond))
}

// Is makes a DelayedError a rate limit.
func (e *DelayedError) Is(target error) bool { return target == ErrRateLimited }

// errNoTurn: a request gave up waiting for the turn another query of this client held.
var errNoTurn = fmt.Errorf("%w: gave up waiting for this client's other query in flight", ErrKSUnavailable)

func (c *Client) delayed(start time.Time) error {
	return &DelayedError{Timeout: c.opts.Timeout, Attempts: c.opts.Retries, Waited: time.Since(start)}
}
