package kserver

import (
	"sync"
	"time"
)

// replayCache remembers query nonces for the replay window. It is in memory: after a
// restart the server refuses queries stamped before it started, so nothing seen before
// the restart can be replayed.
type replayCache struct {
	mu     sync.Mutex
	window time.Duration
	start  int64 // unix ms
	seen   map[[16]byte]int64
	purged int64
}

func newReplayCache(window time.Duration, now time.Time) *replayCache {
	return &replayCache{window: window, start: now.UnixMilli(), seen: map[[16]byte]int64{}}
}

// check returns 0 when the query is fresh (and records it), else the wire status.
func (c *replayCache) check(nonce [16]byte, stamp uint64, now time.Time) uint8 {
	ms, w := now.UnixMilli(), c.window.Milliseconds()
	t := int64(stamp)
	if stamp > 1<<62 || t <= c.start || t < ms-w || t > ms+w {
		return statusStale
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ms-c.purged > w {
		for n, exp := range c.seen {
			if exp < ms {
				delete(c.seen, n)
			}
		}
		c.purged = ms
	}
	if _, ok := c.seen[nonce]; ok {
		return statusReplay
	}
	c.seen[nonce] = t + w
	return 0
}
