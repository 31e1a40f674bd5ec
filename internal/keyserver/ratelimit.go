package keyserver

import (
	"context"
	"fmt"
	"time"
)

// Rate-limit modes (paper section 5, Fig. 2).
const (
	ModeBounded = "bounded" // at most Q evaluations per epoch
	ModeFixed   = "fixed"   // a fixed delay before each evaluation, one query in flight
	ModeExp     = "exp"     // a delay doubling per evaluation up to Max, reset after an idle epoch
	ModeNone    = "none"    // no limit
)

// RateLimit configures the per-client limit. Every count is in evaluations: a batch of
// 50 blinded inputs is 50 queries.
type RateLimit struct {
	Mode  string        // bounded (default), fixed, exp or none
	Q     int64         // bounded: evaluations per epoch (default 825,000)
	Epoch time.Duration // t_E (default one week)
	Delay time.Duration // fixed: t_D per evaluation (default 730ms)
	Start time.Duration // exp: first delay (default 1ms)
	Max   time.Duration // exp: upper limit t_U (default 730ms)
}

// DefaultRateLimit is the paper's NetApp scenario with the bounded mechanism.
func DefaultRateLimit() RateLimit {
	return RateLimit{Mode: ModeBounded, Q: 825_000, Epoch: 7 * 24 * time.Hour,
		Delay: 730 * time.Millisecond, Start: time.Millisecond, Max: 730 * time.Millisecond}
}

func (r RateLimit) check() error {
	switch r.Mode {
	case ModeBounded:
		if r.Q <= 0 || r.Epoch <= 0 {
			return fmt.Errorf("bounded rate limit needs q > 0 and an epoch > 0")
		}
	case ModeFixed:
		if r.Delay <= 0 {
			return fmt.Errorf("fixed-delay rate limit needs a delay > 0")
		}
	case ModeExp:
		if r.Start <= 0 || r.Max < r.Start || r.Epoch <= 0 {
			return fmt.Errorf("exponential rate limit needs 0 < start <= max and an epoch > 0")
		}
	case ModeNone:
	default:
		return fmt.Errorf("rate-limit mode %q: want bounded, fixed, exp or none", r.Mode)
	}
	return nil
}

// RateStore keeps rate-limit state. Implementations: bbolt (one KS, survives restarts) and
// Redis (shared by replicas). All methods are safe for concurrent use.
type RateStore interface {
	// Take adds n to client's count for epoch if the result stays within limit.
	Take(ctx context.Context, client string, epoch, n, limit int64) (bool, error)
	// Lock marks client as having a query in flight; false if one already is. The mark
	// expires after ttl even if Unlock is never called (a crashed replica).
	Lock(ctx context.Context, client string, ttl time.Duration) (bool, error)
	Unlock(ctx context.Context, client string) error
	// ExpDelay returns the total delay for n more evaluations under exponential delay and
	// records the new state.
	ExpDelay(ctx context.Context, client string, epoch int64, n int, start, max time.Duration) (time.Duration, error)
	Close() error
}

// expStep is the exponential-delay rule shared by every store: reset to start if the
// client was idle for a whole epoch, then add cur per evaluation, doubling up to max.
func expStep(lastEpoch, cur int64, epoch int64, n int, start, max time.Duration) (total time.Duration, next int64) {
	if cur <= 0 || epoch > lastEpoch+1 {
		cur = int64(start)
	}
	for range n {
		total += time.Duration(cur)
		cur = min(2*cur, int64(max))
	}
	return total, cur
}

// limiter applies a RateLimit through a Store.
type limiter struct {
	p     RateLimit
	st    RateStore
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

func (l *limiter) delays() bool { return l.p.Mode == ModeFixed || l.p.Mode == ModeExp }

func (l *limiter) epoch() int64 {
	if l.p.Epoch <= 0 {
		return 0
	}
	return l.now().UnixNano() / int64(l.p.Epoch)
}

// admit charges n evaluations to client. In the delay modes it waits out the delay and
// the caller must call release after answering; a second query while one is in flight
// is ErrBusy.
func (l *limiter) admit(ctx context.Context, client string, n int) (release func(), err error) {
	noop := func() {}
	switch l.p.Mode {
	case ModeNone:
		return noop, nil
	case ModeBounded:
		ok, err := l.st.Take(ctx, client, l.epoch(), int64(n), l.p.Q)
		if err != nil {
			return nil, fmt.Errorf("rate-limit store: %w", err)
		}
		if !ok {
			return nil, ErrRateLimited
		}
		return noop, nil
	}
	var d time.Duration
	ttl := time.Minute + time.Duration(n)*l.p.Max // exp: at most n delays of t_U
	if l.p.Mode == ModeFixed {
		d = time.Duration(n) * l.p.Delay
		ttl = time.Minute + d
	}
	ok, err := l.st.Lock(ctx, client, ttl)
	if err != nil {
		return nil, fmt.Errorf("rate-limit store: %w", err)
	}
	if !ok {
		return nil, ErrBusy
	}
	release = func() { l.st.Unlock(context.WithoutCancel(ctx), client) }
	if l.p.Mode == ModeExp {
		if d, err = l.st.ExpDelay(ctx, client, l.epoch(), n, l.p.Start, l.p.Max); err != nil {
			release()
			return nil, fmt.Errorf("rate-limit store: %w", err)
		}
	}
	if err := l.sleep(ctx, d); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
