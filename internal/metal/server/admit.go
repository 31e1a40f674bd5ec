package server

// What requests waiting at a server may hold (docs/design-metal.md "Requests sent to one
// server only"): at most Config.MaxWaitingPerAddr per client address and
// Config.MaxWaitingPerSite per IPv6 /48 (waiters), and at most maxHalves waiting for their
// other part (Server 1's waiting set, Server 2's pending).

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// waiters counts, per client address, the requests waiting in submit: for their turn in
// Server 1's queue, for their other part, or in their call. Each holds a connection and a
// goroutine for up to the pair timeout (or, queued, the call timeout), so one address
// sending parts to one server only could otherwise hold every connection the server takes
// (Config.MaxConns) and keep honest clients out. An address is counted as the server sees
// it on the connection (IPv6: its /64, which one host usually has whole); the servers learn
// nothing they did not already see. An IPv6 address is also counted in its /48, under a
// larger bound: one site (a customer's usual allocation, free from tunnel brokers) has
// 65,536 /64s, each with its own per-address allowance (review of session 15). IPv4 has no
// such second bound: neighbouring addresses are mostly different customers (a /24 is
// shared by an ISP's subscribers), and addresses cost a holder far more than /64s.
type waiters struct {
	mu      sync.Mutex
	n       map[string]int // by address (IPv4, IPv6 /64) and by site (IPv6 /48)
	perAddr int
	perSite int
}

func newWaiters(perAddr, perSite int) *waiters {
	return &waiters{n: map[string]int{}, perAddr: perAddr, perSite: perSite}
}

// origin is where a request comes from, as waiters counts it.
type origin struct {
	addr string // the address (IPv6: its /64)
	site string // IPv6: the /48; IPv4: empty (not counted)
}

// The bounds enter names when a request would pass one.
const (
	fullAddr = "address"
	fullSite = "site"
)

// enter counts one more request of c; it returns which bound that would pass (fullAddr,
// fullSite), counting nothing, or "".
func (w *waiters) enter(c origin) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[c.addr] >= w.perAddr {
		return fullAddr
	}
	if c.site != "" && w.n[c.site] >= w.perSite {
		return fullSite
	}
	w.n[c.addr]++
	if c.site != "" {
		w.n[c.site]++
	}
	return ""
}

// leave uncounts a request enter counted.
func (w *waiters) leave(c origin) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range []string{c.addr, c.site} {
		if k == "" {
			continue
		}
		if w.n[k]--; w.n[k] <= 0 {
			delete(w.n, k)
		}
	}
}

// total is the number of requests counted (tests): those of every address.
func (w *waiters) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := 0
	for k, n := range w.n {
		if !strings.HasSuffix(k, "/48") {
			t += n
		}
	}
	return t
}

// clientOf is where remote (an http.Request's RemoteAddr) is counted.
func clientOf(remote string) origin {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return origin{addr: remote}
	}
	a := ap.Addr().Unmap()
	if !a.Is6() {
		return origin{addr: a.String()}
	}
	p64, _ := a.Prefix(64)
	p48, _ := a.Prefix(48)
	return origin{addr: p64.String(), site: p48.String()}
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
