package ratelog

import (
	"sync"
	"time"
)

// DefaultEvery is the least time between two lines of a Spacer whose interval is not set.
const DefaultEvery = 10 * time.Second

// Spacer lets one occurrence of a fault be logged per interval. Its zero value is ready
// (DefaultEvery); it is safe for concurrent use.
type Spacer struct {
	mu    sync.Mutex
	every time.Duration // 0: DefaultEvery
	last  time.Time     // when a line was last let through (zero: never)
	held  int64         // occurrences since then, not logged
}

// Due reports whether this occurrence is to be logged, and if so how many were held back
// since the last one that was.
func (s *Spacer) Due() (ok bool, held int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	every := s.every
	if every == 0 {
		every = DefaultEvery
	}
	now := time.Now()
	if !s.last.IsZero() && now.Sub(s.last) < every {
		s.held++
		return false, 0
	}
	held, s.last, s.held = s.held, now, 0
	return true, held
}

// SetEvery sets the least time between two lines (0: DefaultEvery); a line held by the
// old interval is due as soon as the new one allows.
func (s *Spacer) SetEvery(d time.Duration) {
	s.mu.Lock()
	s.every = d
	s.mu.Unlock()
}
