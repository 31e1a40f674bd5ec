package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// Retrying calls the servers answered "busy" (docs/design-metal.md "Requests sent to one
// server only"): a server lets at most half its connections wait for their other part and
// answers the one that waited longest 409 "busy ... (try again)" past that. Honest calls
// meet it in a burst (more than --max-conns/2 at once whose parts reach one server before
// the other) as well as in a flood; the call never ran, so it is sent again, under a new
// request id, after a pause with jitter (the burst's other calls spread out), until
// Client.BusyRetry has passed.

// DefaultBusyRetry is how long New's clients retry a busy call.
const DefaultBusyRetry = 30 * time.Second

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
}

func (e *serverError) Error() string {
	return fmt.Sprintf("metal server %d: %s: %s", e.server, e.status, e.msg)
}

// replyError is server i's (0 or 1) answer resp with body b, as an error. A 409 with
// Retry-After is busy; so is one saying so from servers older than the header.
func replyError(i int, resp *http.Response, b []byte) error {
	msg := strings.TrimSpace(string(b))
	busy := resp.StatusCode == http.StatusConflict && (resp.Header.Get("Retry-After") != "" || strings.Contains(msg, " is busy: "))
	return &serverError{server: i + 1, status: resp.Status, msg: msg, busy: busy}
}

// isBusy: err says a server was busy, and every other error in it is the cancellation
// of the other server's part that followed (ctx, the caller's, still live).
func isBusy(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	busy := false
	for _, e := range errs {
		var se *serverError
		switch {
		case errors.As(e, &se) && se.busy:
			busy = true
		case errors.Is(e, context.Canceled):
		default:
			return false
		}
	}
	return busy
}

// retryBusy runs call until it succeeds, fails otherwise than busy, or BusyRetry has
// passed (then the busy error is returned, as it came).
func (c *Client) retryBusy(ctx context.Context, call func() error) error {
	end := time.Now().Add(c.BusyRetry)
	for pause := busyFirst; ; pause = min(2*pause, busyMax) {
		err := call()
		if !isBusy(ctx, err) || !time.Now().Before(end) {
			return err
		}
		wait := pause/2 + rand.N(pause/2+1) // jitter: the burst's calls come back apart
		if left := time.Until(end); wait > left {
			wait = left
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return err
		}
	}
}
