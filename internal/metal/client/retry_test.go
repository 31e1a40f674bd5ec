package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
)

// Which answers the client retries: a 409 with Retry-After (this session's servers) or
// saying "is busy:" (older servers' busy answer, without the header); not another 409
// (a part that never arrived), a 503, nor a busy answer joined with another failure than
// the cancellation of the other server's part.
func TestBusyAnswersRetried(t *testing.T) {
	ctx := context.Background()
	answer := func(status int, retryAfter, msg string) error {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return replyError(1, &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h}, []byte(msg+"\n"))
	}
	busy := answer(409, "1", "metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)")
	older := answer(409, "", "metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)")
	missing := answer(409, "", "server 2 did not receive its part of this request (send both parts, same id)")
	down := answer(503, "", "metal server 1 cannot reach server 2 (connection refused); it keeps trying every 1s: try again")
	cancelled := errors.Join(nil, context.Canceled)
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"busy", errors.Join(cancelled, busy), true},
		{"busy from an older server", errors.Join(older, context.Canceled), true},
		{"busy alone", busy, true},
		{"part missing", errors.Join(missing, context.Canceled), false},
		{"server 2 unreachable", errors.Join(down, context.Canceled), false},
		{"busy and unreachable", errors.Join(busy, down), false},
		{"no error", nil, false},
	} {
		if got := isBusy(ctx, c.err); got != c.want {
			t.Errorf("%s: retried %v, want %v", c.name, got, c.want)
		}
	}
	if busy.Error() != "metal server 2: Conflict: metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)" {
		t.Errorf("a busy answer reads %q", busy)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if isBusy(done, busy) {
		t.Error("a busy answer retried after the caller gave up")
	}
}
