package failover

import (
	"sync"
	"sync/atomic"
	"time"
)

// Rotation is the turn and the failures of n endpoints, numbered 0 to n-1. It is safe for
// concurrent use.
type Rotation struct {
	next    atomic.Uint64
	downFor time.Duration
	mu      sync.Mutex
	down    []time.Time // endpoint i is tried last until down[i]
	fails   []int       // endpoint i's failures since it last answered
}

// MaxDownFactor bounds how many times downFor an endpoint that keeps failing is left out.
const MaxDownFactor = 16

// New returns the rotation of n endpoints (n >= 1); one that fails is tried last for
// downFor, twice as long after each further failure without an answer between (up to
// MaxDownFactor times downFor): a node that hangs every attempt (a stopped process whose
// kernel still takes connections) then costs its clients one attempt per minute or so, not
// one per downFor.
func New(n int, downFor time.Duration) *Rotation {
	return &Rotation{downFor: downFor, down: make([]time.Time, n), fails: make([]int, n)}
}

// Order is the endpoints to try for one request: from the next in turn, those marked down last.
func (r *Rotation) Order() []int {
	n := len(r.down)
	start := int(r.next.Add(1) % uint64(n))
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	up, down := make([]int, 0, n), []int{}
	for k := range n {
		i := (start + k) % n
		if now.Before(r.down[i]) {
			down = append(down, i)
		} else {
			up = append(up, i)
		}
	}
	return append(up, down...)
}

// MarkDown puts endpoint i last in the order for downFor from now, doubled for each
// failure before it since the endpoint last answered (MarkUp).
func (r *Rotation) MarkDown(i int) {
	r.mu.Lock()
	r.down[i] = time.Now().Add(r.downFor * time.Duration(min(1<<r.fails[i], MaxDownFactor)))
	r.fails[i] = min(r.fails[i]+1, 8)
	r.mu.Unlock()
}

// MarkUp records that endpoint i answered: its next failure counts as its first.
func (r *Rotation) MarkUp(i int) {
	r.mu.Lock()
	r.fails[i] = 0
	r.mu.Unlock()
}

// DownFor reports how long endpoint i is still left out (0: it is in turn).
func (r *Rotation) DownFor(i int) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(0, time.Until(r.down[i]))
}
