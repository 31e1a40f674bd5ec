package ksclient

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/veil-project/veil/internal/failover"
)

// replicas are the HTTPS endpoints of one key server's replicas (docs/deploy.md). Requests
// start at the next replica in turn, so clients spread over them; a replica that gives no
// answer or answers 5xx (errRetry) is left out for replicaDownFor and the request goes to
// the next one at once. Every other answer (a key, 429, 403) is final. Replicas share the
// rate-limit budget through Redis, so spreading gives a client no more derivations.
type replicas struct {
	urls []*url.URL
	rot  *failover.Rotation
}

const replicaDownFor = 5 * time.Second

func newReplicas(us []*url.URL) *replicas {
	return &replicas{urls: us, rot: failover.New(len(us), replicaDownFor)}
}

func (r *replicas) send(try func(*url.URL) ([]byte, error)) ([]byte, error) {
	if len(r.urls) == 1 {
		return try(r.urls[0])
	}
	var err error
	for _, i := range r.rot.Order() {
		var out []byte
		if out, err = try(r.urls[i]); err == nil {
			r.rot.MarkUp(i)
			return out, nil
		}
		var re errRetry
		if !errors.As(err, &re) {
			return nil, err
		}
		r.rot.MarkDown(i)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return nil, err // the attempt's time is up: the caller's next try starts elsewhere
		}
	}
	return nil, err
}
