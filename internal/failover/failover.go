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
}

// New returns the rotation of n endpoints (n >= 1); one that fails is tried last for downFor.
func New(n int, downFor time.Duration) *Rotation {
	return &Rotation{downFor: downFor, down: make([]time.Time, n)}
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

// MarkDown puts endpoint i last in the order for downFor from now.
func (r *Rotation) MarkDown(i int) {
	r.mu.Lock()
	r.down[i] = time.Now().Add(r.downFor)
	r.mu.Unlock()
}
