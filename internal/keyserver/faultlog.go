package keyserver

import (
	"sync"
	"time"
)

// limiterWarnEvery is the least time between two warnings about evaluations refused
// because the rate-limit store (Redis) does not answer: while it is down every
// evaluation of every client is refused, and a line each would flood the log.
var limiterWarnEvery = 10 * time.Second

// faultLog rate-limits the warnings of one server fault.
type faultLog struct {
	mu       sync.Mutex
	last     time.Time
	unlogged int64 // refusals since the last line, not logged
}

// warnLimiter logs an evaluation refused because the rate-limit store failed, over either
// transport, at most once per limiterWarnEvery; the line counts the refusals left
// unlogged before it. Over UDP the refusal is a drop the client cannot tell from a lost
// datagram, so this line is the only trace of it (session 16: HTTPS logged it, UDP did
// not).
func (s *Server) warnLimiter(transport, client string, err error) {
	f := &s.limWarn
	f.mu.Lock()
	now := time.Now()
	if !f.last.IsZero() && now.Sub(f.last) < limiterWarnEvery {
		f.unlogged++
		f.mu.Unlock()
		return
	}
	n := f.unlogged
	f.last, f.unlogged = now, 0
	f.mu.Unlock()
	s.log.Warn("evaluation refused", "client", client, "transport", transport, "reason", "limiter",
		"err", err, "unlogged_before", n)
}
