package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// Retrying calls that never ran (docs/design-metal.md "Requests sent to one server only"
// and "When the other server is gone"). Only answers that say the call never ran are
// retried, so a call that may have run (in part, or whole and committed on both servers)
// is never run twice. They are sent again, under a new request id, after a pause with
// jitter (calls that met them together come back apart), until a bound has passed; then
// the server's answer is returned, alone:
//
//   - busy: a server lets at most half its connections wait for their other part and
//     answers the one that waited longest 409 "busy ... (try again)" past that. Honest
//     calls meet it in a burst as well as in a flood. Bound: Client.BusyRetry.
//   - a server down or restarting: while Server 1 cannot reach Server 2 (a Server 2
//     restart, the network between them down) it answers at once 503 "cannot reach server
//     2 ... try again"; a server told to stop answers the requests not yet in a call 503
//     "shutting down (try again)"; both with Retry-After, which no other 503 carries. While
//     a server's process is down the client's own connection to it is refused: the part
//     never reached it, and without both parts no call runs (Server 1 drives every call,
//     Server 2 runs only the ids Server 1 announces). Server 1 redials on its own, so a
//     short outage ends by itself. The same for either server. Bound:
//     Client.UnreachableRetry.
//
// Nothing else is retried: a 503 "metal call failed" may come from a call that ran in part,
// and so may a connection that broke after the request was sent (a server killed in a
// call: both servers may have committed it). Running such a call again is not harmless: a
// write would land after, and undo, a write another holder of the capability made
// meanwhile; an account would take a second range of the deployment's file ids; a send
// would add a second list entry. Refusals (400, 401, 403, 429) do not change by asking
// again.
// DefaultBusyRetry is how long New's clients retry a busy call.
const DefaultBusyRetry = 30 * time.Second

// DefaultUnreachableRetry is how long New's clients retry a call while a server is down or
// cannot reach the other (a restart takes a few seconds).
const DefaultUnreachableRetry = 20 * time.Second

const (
	busyFirst = 50 * time.Millisecond // the first pause's upper end; it doubles
	busyMax   = 2 * time.Second       // the largest pause's upper end
)

// serverError is a server's answer other than 200.
type serverError struct {
	server int // 1 or 2
	status string
	msg    string
	busy   bool // 409 busy: the call did not run, try again
	down   bool // 503 with Retry-After (Server 1 cannot reach Server 2, a shutdown): the call did not run
}

func (e *serverError) Error() string {
	return fmt.Sprintf("metal server %d: %s: %s", e.server, e.status, e.msg)
}

// connError is a request to server (1 or 2) that got no answer.
type connError struct {
	server int
	err    error
}

func (e *connError) Error() string { return fmt.Sprintf("metal server %d: %v", e.server, e.err) }
func (e *connError) Unwrap() error { return e.err }

// replyError is server i's (0 or 1) answer resp with body b, as an error. A 409 with
// Retry-After is busy; so is one saying so from servers older than the header. A 503 with
// Retry-After is a server down or unreachable (the call never ran); so is one from Server
// 1 saying "cannot reach server 2" (servers before the header).
func replyError(i int, resp *http.Response, b []byte) error {
	msg := strings.TrimSpace(string(b))
	retry := resp.Header.Get("Retry-After") != ""
	busy := resp.StatusCode == http.StatusConflict && (retry || strings.Contains(msg, " is busy: "))
	down := resp.StatusCode == http.StatusServiceUnavailable && (retry || i == 0 && strings.Contains(msg, " cannot reach server 2 "))
	return &serverError{server: i + 1, status: resp.Status, msg: msg, busy: busy, down: down}
}

// A retryable error's kind.
const (
	notRetried = iota
	busyKind
	downKind // a server down, restarting or unreachable
)

// retryKind says whether err, a call's failure, is retried, and why: every error in it is
// busy, a server down or unreachable, or the cancellation of the other server's part that
// followed (ctx, the caller's, still live), and at least one is not a cancellation. main
// is the error to return if the call is not tried again: the server's answer, or the
// refused connection.
func retryKind(ctx context.Context, err error) (kind int, main error) {
	if err == nil || ctx.Err() != nil {
		return notRetried, err
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var se *serverError
		var ce *connError
		switch {
		case errors.As(e, &se) && se.down:
			kind, main = downKind, e
		case errors.As(e, &se) && se.busy:
			if kind == notRetried {
				kind, main = busyKind, e
			}
		case errors.As(e, &ce) && errors.Is(ce.err, syscall.ECONNREFUSED):
			// The server's process is down: the part never reached it, the call cannot have run.
			if kind != downKind { // a server's answer says it better
				kind, main = downKind, e
			}
		case errors.Is(e, context.Canceled):
		default:
			return notRetried, err
		}
	}
	return kind, main
}

// retry runs call until it succeeds, fails otherwise than busy or down, or the
// bound of its failure (BusyRetry, UnreachableRetry, counted from the first try) has
// passed; then it returns the server's answer alone (one line), not the cancellation of
// the other part that followed it.
func (c *Client) retry(ctx context.Context, call func() error) error {
	start := time.Now()
	for pause := busyFirst; ; pause = min(2*pause, busyMax) {
		err := call()
		kind, main := retryKind(ctx, err)
		bound := c.BusyRetry
		if kind == downKind {
			bound = c.UnreachableRetry
		}
		if kind == notRetried {
			return err
		}
		left := bound - time.Since(start)
		if left <= 0 {
			if bound > 0 {
				return fmt.Errorf("%w (tried for %v)", main, bound)
			}
			return main
		}
		wait := min(pause/2+rand.N(pause/2+1), left) // jitter: calls that met it together come back apart
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return main
		}
	}
}
