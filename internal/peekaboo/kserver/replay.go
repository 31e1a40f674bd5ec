package kserver

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

const (
	// aheadAllowance is how far ahead of this server's clock a query may be stamped
	// (clients' clocks drift; NTP keeps them within well under a second).
	aheadAllowance = wire.MaxAhead
	// markStep is how far past this server's clock the stored high-water mark is raised,
	// so that under load it is written about once per step, not once per query.
	markStep = time.Second
)

// replayStore makes the replay cache's memory survive a restart (kserver.db, meta/replay
// and bucket replay: docs/formats/peekaboo-state.md).
type replayStore interface {
	// mark records durably that every answered query not recorded by ahead was stamped
	// at or before ms.
	mark(ms int64) error
	// ahead records durably an answered query stamped past the mark, and may forget
	// those stamped before expired (the window refuses them).
	ahead(nonce [16]byte, stamp, expired int64) error
}

// replayCache refuses a query answered before: by its nonce, remembered until its stamp
// leaves the window, and by refusing stamps outside the window (past: ReplayWindow;
// future: aheadAllowance). Across a restart (the nonces are in memory) it refuses stamps
// at or before a floor, which every query answered before the restart either was stamped
// at or before, or has its nonce stored.
//
// With a store the floor is the high-water mark the previous run stored. A run answers
// a stamp above its stored mark only after raising the mark (to its clock plus
// markStep: clients whose clocks are right) or storing the nonce (a client clock more
// than markStep ahead), both fsynced; at a clean shutdown it lowers the mark to the
// highest stamp the mark covers. So a clean restart refuses nothing stamped after the
// last query answered, a crash at most markStep past the crash, and neither depends on
// this clock not running backward across the restart.
//
// Without a store (newReplayCache) the floor is the start time plus aheadAllowance,
// beyond which no previous run answered anything if this clock did not run backward.
//
// Private queries have a floor of their own (privFloor, at or above floor): the first
// start on state written by a veil that kept no mark (openReplay) raises it, not floor,
// since such a veil answered no keyword query this one takes.
type replayCache struct {
	mu        sync.Mutex
	window    time.Duration
	ahead     time.Duration
	floor     int64 // unix ms: stamps at or before it are refused
	privFloor int64 // unix ms: private queries' stamps at or before it are refused
	ceil      int64 // unix ms: the stored mark (MaxInt64: no store)
	high      int64 // unix ms: the highest stamp answered that the mark covers
	store     replayStore
	seen      map[[16]byte]int64 // nonce -> forget after (unix ms)
	purged    int64
}

func aheadFor(window time.Duration) time.Duration { return min(window, aheadAllowance) }

// newReplayCache is a cache without a store: it refuses stamps up to now plus the ahead
// allowance, the most a previous run could have answered.
func newReplayCache(window time.Duration, now time.Time) *replayCache {
	a := aheadFor(window)
	floor := now.Add(a).UnixMilli()
	return &replayCache{window: window, ahead: a, floor: floor, privFloor: floor, ceil: math.MaxInt64, seen: map[[16]byte]int64{}}
}

// newStoredReplayCache is a cache resuming from what a previous run stored: its mark and
// the nonces of the queries it answered above it (nonce -> stamp).
func newStoredReplayCache(window time.Duration, mark int64, ahead map[[16]byte]int64, store replayStore) *replayCache {
	c := &replayCache{window: window, ahead: aheadFor(window), floor: mark, privFloor: mark, ceil: mark, high: mark, store: store, seen: map[[16]byte]int64{}}
	for n, t := range ahead {
		if t > mark {
			c.seen[n] = t + window.Milliseconds()
		}
	}
	return c
}

// check returns 0 when the keyword query is fresh (and records it), else the wire status.
func (c *replayCache) check(nonce [16]byte, stamp uint64, now time.Time) uint8 {
	st, _ := c.verdict(nonce, stamp, now, false)
	return st
}

// verdict is check, for a private query if private, with the reason for a refusal, for
// the server's log.
func (c *replayCache) verdict(nonce [16]byte, stamp uint64, now time.Time, private bool) (uint8, error) {
	ms, w, a := now.UnixMilli(), c.window.Milliseconds(), c.ahead.Milliseconds()
	t := int64(stamp)
	switch {
	case stamp > 1<<62 || t > ms+a:
		return statusStale, fmt.Errorf("query stamped %s ahead of this server's clock; check the client's clock (at most %s ahead is taken)", secs(t-ms), c.ahead)
	case t < ms-w:
		return statusStale, fmt.Errorf("query stamped %s behind this server's clock; check the client's clock, or the query was held back (at most %s behind is taken, the replay window)", secs(ms-t), c.window)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t <= c.floor {
		return statusStale, fmt.Errorf("query stamped %s before this server's restart mark or at it (an earlier run may have answered it); a query stamped later is taken", secs(c.floor-t))
	}
	if private && t <= c.privFloor {
		return statusStale, fmt.Errorf("private query stamped %s before the mark set when this server first opened state written by an older veil, or at it (that veil may have answered it); a private query stamped later is taken", secs(c.privFloor-t))
	}
	if ms-c.purged > w {
		for n, exp := range c.seen {
			if exp < ms {
				delete(c.seen, n)
			}
		}
		c.purged = ms
	}
	if _, ok := c.seen[nonce]; ok {
		return statusReplay, fmt.Errorf("query nonce seen before")
	}
	switch {
	case t <= c.ceil:
		c.high = max(c.high, t)
	case t <= ms+markStep.Milliseconds():
		mark := ms + markStep.Milliseconds()
		if err := c.store.mark(mark); err != nil {
			return statusInternal, fmt.Errorf("store the replay high-water mark: %w", err)
		}
		c.ceil, c.high = mark, max(c.high, t)
	default:
		if err := c.store.ahead(nonce, t, ms-w); err != nil {
			return statusInternal, fmt.Errorf("store the nonce of a query stamped ahead: %w", err)
		}
	}
	c.seen[nonce] = t + w
	return 0, nil
}

// shutdown lowers the stored mark to the highest stamp it covers, so a clean restart
// refuses nothing stamped after the last query answered. Should a query still be checked
// afterwards, it is answered only below the mark or once stored.
func (c *replayCache) shutdown() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil || c.high >= c.ceil {
		return nil
	}
	if err := c.store.mark(c.high); err != nil {
		return err
	}
	c.ceil = c.high
	return nil
}

// secs formats a millisecond difference as seconds for the log ("31.2 s").
func secs(ms int64) string { return fmt.Sprintf("%.1f s", float64(ms)/1000) }
