package server

// What requests waiting at a server may hold (docs/design-metal.md "Requests sent to one
// server only"): at most Config.MaxWaitingPerAddr per client address (waiters), and at most
// maxHalves waiting for their other part (Server 1's waiting set, Server 2's pending).

import (
	"fmt"
	"net/netip"
	"sync"
)

// waiters counts, per client address, the requests waiting in submit: for their turn in
// Server 1's queue, for their other part, or in their call. Each holds a connection and a
// goroutine for up to the pair timeout (or, queued, the call timeout), so one address
// sending parts to one server only could otherwise hold every connection the server takes
// (Config.MaxConns) and keep honest clients out. An address is counted as the server sees
// it on the connection (IPv6: its /64, which one host usually has whole); the servers learn
// nothing they did not already see.
type waiters struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

func newWaiters(max int) *waiters { return &waiters{n: map[string]int{}, max: max} }

// enter counts one more request of addr; false (and nothing counted) if addr already has
// max waiting.
func (w *waiters) enter(addr string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[addr] >= w.max {
		return false
	}
	w.n[addr]++
	return true
}

// leave uncounts a request enter counted.
func (w *waiters) leave(addr string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[addr]--; w.n[addr] <= 0 {
		delete(w.n, addr)
	}
}

// total is the number of requests counted (tests).
func (w *waiters) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := 0
	for _, n := range w.n {
		t += n
	}
	return t
}

// clientAddr is the key waiters counts remote (an http.Request's RemoteAddr) under.
func clientAddr(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// maxHalves is how many requests may wait for their other part on this server: half the
// connections it takes, so that requests whose other part never comes leave the other half
// to clients that send both.
func (s *Server) maxHalves() int { return max(s.cfg.MaxConns/2, 1) }

// crowded answers a request that had waited longest for its other part when more than
// maxHalves waited; it counts as missing (409). An honest client meets it too: a burst of
// more than maxHalves requests whose parts reach one server before the other (or wait at
// Server 2 while their twins wait in Server 1's queue), so it says to try again, not to
// send both parts (found by review: it told a client that had sent both to do so).
type crowded struct{ role int }

func (c crowded) Error() string {
	return fmt.Sprintf("metal server %d is busy: too many requests were waiting for their other part, and this one had waited longest (try again)", c.role)
}

func (c crowded) Is(target error) bool { return target == errMissing }
