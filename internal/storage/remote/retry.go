package remote

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/backoff"
	"github.com/veil-project/veil/internal/storewire"
)

// RetryBackoff is the wait before each retry of an idempotent request that got no answer
// (a dropped connection, a restarting service) or a 503: the policy DupLESS uploads use
// (internal/dupless retry.go), so a restart of the service during a put fails no list,
// stat or create call that an upload would have survived.
var RetryBackoff = []time.Duration{250 * time.Millisecond, time.Second}

// idempotent reports whether a request may be sent again: reads, directory creation
// (creating an existing directory succeeds) and deletes. Puts are retried by their
// callers, who can replay the body; moves and admin calls are not repeated.
func idempotent(method, u string) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodDelete:
		return strings.Contains(u, "/"+storewire.Version+"/files/")
	case http.MethodPost:
		return strings.Contains(u, "/"+storewire.Version+"/dirs/")
	}
	return false
}

// noAnswer reports whether err means the service did not answer (so retrying may help).
func noAnswer(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var se *serviceError
	if errors.As(err, &se) {
		return se.status == http.StatusServiceUnavailable
	}
	return true
}

// serviceError is an error the service answered with; status keeps the HTTP status.
type serviceError struct {
	status int
	err    error
	body   *storewire.Error // the answer's error body (nil: none that decoded)
}

func (e *serviceError) Error() string { return e.err.Error() }
func (e *serviceError) Unwrap() error { return e.err }

// retry runs send, and again after each RetryBackoff pause while it gets no answer.
func retry(ctx context.Context, send func() error) error {
	return backoff.Retry(ctx, RetryBackoff, func(err error) bool { return noAnswer(ctx, err) }, send)
}
