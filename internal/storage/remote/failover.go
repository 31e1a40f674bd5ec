package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/failover"
	"github.com/veil-project/veil/internal/storage"
)

// endpoints are the nodes of one service. Requests start at the next node in turn (so
// clients spread over the nodes); a node that cannot be reached (the dial fails) or
// answers 503 is skipped for downFor and the request goes to the next one at once. A
// streamed body (a put) is only sent again after a failed dial, when no byte of it has
// left; a body of bytes is rewound (a streamed body that got no answer is not, but its node
// is skipped by the caller's next try). When every node fails, the last error is returned
// (and the callers' retries, retry.go, apply).
type endpoints struct {
	urls []*url.URL
	rot  *failover.Rotation
}

// downFor is how long a node that failed is left out of the rotation.
const downFor = 5 * time.Second

func newEndpoints(us []*url.URL) *endpoints {
	return &endpoints{urls: us, rot: failover.New(len(us), downFor)}
}

// send calls try with u rewritten onto each node in turn until one answers.
func (e *endpoints) send(base, u string, body io.Reader, streamed bool, try func(string) (*http.Response, error)) (*http.Response, error) {
	suffix := strings.TrimPrefix(u, base)
	n := len(e.urls)
	if n == 1 {
		return try(u)
	}
	order := e.rot.Order()
	var err error
	for k, i := range order {
		if rs, ok := body.(io.Seeker); ok && k > 0 {
			if _, serr := rs.Seek(0, io.SeekStart); serr != nil {
				return nil, err
			}
		}
		var resp *http.Response
		resp, err = try(e.urls[i].String() + suffix)
		if err == nil {
			e.rot.MarkUp(i)
			return resp, nil
		}
		if !movesOn(err, !streamed || body == nil) {
			if movesOn(err, true) { // no answer: the caller's next try starts elsewhere
				e.rot.MarkDown(i)
			}
			return nil, err
		}
		e.rot.MarkDown(i)
	}
	return nil, err
}

// movesOn reports whether err lets the request go to another node: the dial failed
// (nothing was sent), or, for a request that can be sent again, the node answered 503
// or the connection broke.
func movesOn(err error, replayable bool) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if storage.DialFailed(err) != nil {
		return true
	}
	if !replayable {
		return false
	}
	var se *serviceError
	if errors.As(err, &se) {
		return se.status == http.StatusServiceUnavailable
	}
	return true // no answer at all
}
