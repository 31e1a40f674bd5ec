package remote

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/storewire"
)

// stopLatch remembers that the service said it cannot store anything (507 no_space: its
// disk is full; 503 unavailable: its blob storage does not answer), so that the puts that
// follow fail at once with the same clear error instead of each sending its body to be
// refused (a 303-file put took 252 s to give up before). It holds for noSpaceHold or
// storewire.RetryAfterSeconds; the first put after that asks the service again.
type stopLatch struct {
	mu    sync.Mutex
	err   error
	until time.Time
}

const noSpaceHold = 30 * time.Second

func (l *stopLatch) note(err error) {
	var hold time.Duration
	switch {
	case errors.Is(err, storewire.ErrNoSpace):
		hold = noSpaceHold
	case errors.Is(err, storewire.ErrUnavailable):
		hold = storewire.RetryAfterSeconds * time.Second
	default:
		return
	}
	l.mu.Lock()
	l.err, l.until = err, time.Now().Add(hold)
	l.mu.Unlock()
}

func (l *stopLatch) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil || time.Now().After(l.until) {
		l.err = nil
		return nil
	}
	return fmt.Errorf("%w (not sent: the service refused a put %s ago)", l.err, time.Since(l.until.Add(-holdOf(l.err))).Round(time.Millisecond))
}

func holdOf(err error) time.Duration {
	if errors.Is(err, storewire.ErrNoSpace) {
		return noSpaceHold
	}
	return storewire.RetryAfterSeconds * time.Second
}
