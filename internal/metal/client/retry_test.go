package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
)

// Which answers the client retries: a 409 with Retry-After (this session's servers) or
// saying "is busy:" (older servers' busy answer, without the header); Server 1's 503 that
// it cannot reach Server 2 (with Retry-After, or saying so), either server's 503 with
// Retry-After (a shutdown answering a request not yet in a call), and either server
// refusing the connection (a restart: Server 1's was not retried); not another 409 (a part
// that never arrived), another 503 (a failed call, a shutdown's failed call, an older
// server's shutdown answer), a connection that broke after the request was sent (the call
// may have run), nor any of these joined with another failure than the cancellation of
// the other server's part. What is returned when the call is not tried again is the
// server's answer alone.
func TestBusyAnswersRetried(t *testing.T) {
	ctx := context.Background()
	answer := func(server, status int, retryAfter, msg string) error {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return replyError(server-1, &http.Response{StatusCode: status, Status: http.StatusText(status), Header: h}, []byte(msg+"\n"))
	}
	busy := answer(2, 409, "1", "metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)")
	older := answer(2, 409, "", "metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)")
	missing := answer(2, 409, "", "server 2 did not receive its part of this request (send both parts, same id)")
	down := answer(1, 503, "1", "metal server 1 cannot reach server 2 (connection refused); it keeps trying every 1s: try again")
	downOlder := answer(1, 503, "", "metal server 1 cannot reach server 2 (connection refused); it keeps trying every 1s: try again")
	failed := answer(1, 503, "", "metal call failed: metal server 2 stopped answering on the 2PC link")
	shutdown := answer(1, 503, "", "metal server 1 is shutting down (try again)")
	stopping1 := answer(1, 503, "1", "metal server 1 is shutting down (try again)")
	stopping2 := answer(2, 503, "1", "metal server 2 is shutting down (try again)")
	callStopped := answer(1, 503, "", "metal call failed: metal server 1 is shutting down (try again)")
	reset := &connError{server: 1, err: fmt.Errorf("Post \"https://127.0.0.1:1/v1/access\": read tcp: %w", syscall.ECONNRESET)}
	refused := func(server int) error {
		return &connError{server: server, err: fmt.Errorf("Post \"https://127.0.0.1:1/v1/access\": dial tcp: %w", syscall.ECONNREFUSED)}
	}
	cancelled := errors.Join(nil, context.Canceled)
	for _, c := range []struct {
		name string
		err  error
		want int
		main error
	}{
		{"busy", errors.Join(cancelled, busy), busyKind, busy},
		{"busy from an older server", errors.Join(older, context.Canceled), busyKind, older},
		{"busy alone", busy, busyKind, busy},
		{"part missing", errors.Join(missing, context.Canceled), notRetried, nil},
		{"server 2 unreachable", errors.Join(down, context.Canceled), downKind, down},
		{"server 2 unreachable, older server", errors.Join(downOlder, context.Canceled), downKind, downOlder},
		{"server 2 refuses the connection", errors.Join(context.Canceled, refused(2)), downKind, refused(2)},
		{"server 2 refuses, server 1 says so", errors.Join(down, refused(2)), downKind, down},
		{"server 1 refuses the connection", errors.Join(refused(1), context.Canceled), downKind, refused(1)},
		{"server 1 shutting down", errors.Join(stopping1, context.Canceled), downKind, stopping1},
		{"server 2 shutting down", errors.Join(context.Canceled, stopping2), downKind, stopping2},
		{"a call cut by a shutdown", errors.Join(callStopped, context.Canceled), notRetried, nil},
		{"server 1 killed in the call", errors.Join(reset, context.Canceled), notRetried, nil},
		{"a failed call", errors.Join(failed, context.Canceled), notRetried, nil},
		{"shutting down", errors.Join(shutdown, context.Canceled), notRetried, nil},
		{"busy and unreachable", errors.Join(busy, down), downKind, down},
		{"busy and a failed call", errors.Join(busy, failed), notRetried, nil},
		{"no error", nil, notRetried, nil},
	} {
		got, main := retryKind(ctx, c.err)
		if got != c.want || c.main != nil && main.Error() != c.main.Error() {
			t.Errorf("%s: kind %d (%v), want %d (%v)", c.name, got, main, c.want, c.main)
		}
	}
	if busy.Error() != "metal server 2: Conflict: metal server 2 is busy: too many requests were waiting for their other part, and this one had waited longest (try again)" {
		t.Errorf("a busy answer reads %q", busy)
	}
	if k, _ := retryKind(ctx, answer(2, 503, "", "x cannot reach server 2 y")); k != notRetried {
		t.Error("a 503 from server 2 without Retry-After taken for server 1's unreachable answer")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if k, _ := retryKind(done, busy); k != notRetried {
		t.Error("a busy answer retried after the caller gave up")
	}
	if k, _ := retryKind(done, down); k != notRetried {
		t.Error("an answer retried after the caller gave up")
	}
}

// TestFailedCallIsOneLine: a call that fails at one server and so cancels the other's part
// is that server's answer alone, one line; it was both joined, the server's answer and
// "metal server N: ... context canceled" on a second line. Two failures, or the caller
// giving up, stay as they are.
func TestFailedCallIsOneLine(t *testing.T) {
	failed := &serverError{server: 1, status: "503 Service Unavailable", msg: "metal call failed: metal server 2 went silent (...): link closed"}
	cancelled := &connError{server: 2, err: fmt.Errorf("Post \"https://127.0.0.1:1/v1/access\": %w", context.Canceled)}
	other := &serverError{server: 2, status: "409 Conflict", msg: "server 1 did not announce this request"}
	live, done := context.Background(), func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}()
	for _, c := range []struct {
		name string
		ctx  context.Context
		errs [2]error
		want string
	}{
		{"server 1 failed", live, [2]error{failed, cancelled}, failed.Error()},
		{"server 2 failed", live, [2]error{&connError{server: 1, err: context.Canceled}, other}, other.Error()},
		{"both failed", live, [2]error{failed, other}, failed.Error() + "\n" + other.Error()},
		{"the caller gave up", done, [2]error{failed, cancelled}, failed.Error() + "\n" + cancelled.Error()},
		{"no error", live, [2]error{}, ""},
	} {
		got := ""
		if err := joinParts(c.ctx, c.errs); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
