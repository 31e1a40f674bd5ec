package server

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestShutdownAnswersWaitingRequests: a server shutting down answers at once the requests
// that wait for their other part or their turn, 503 "shutting down", and stops in well under
// its 30 s drain limit. Server 2 kept its clients' parts for the call timeout (5 min), and
// Server 1, whose Server 2 had gone, kept its queued requests as long: each shutdown waited
// the full 30 s and then cut the connections (Serve's "graceful shutdown did not finish").
// The pair timeout here is a minute, so nothing but the shutdown answers them. (Server 1
// now answers at once while Server 2 is known unreachable; its requests here queue while
// its first attempt to reach Server 2 hangs.) The answer carries Retry-After: the call
// never ran, and the client library sends it again (a restart).
func TestShutdownAnswersWaitingRequests(t *testing.T) {
	p := startPairWith(t, 0, time.Minute)
	received := func(i int) int { p.mu.Lock(); defer p.mu.Unlock(); return len(p.bodies[i]) }
	for i, peerUp := range []string{"1", "0"} { // Server 2 with the link up, then Server 1 with its link not up yet
		if i == 1 {
			viaRelayHeld(t, p, true)
		}
		waitLink(t, p, peerUp)
		hc := httpClient(t, []string{p.dep.CA1, p.dep.CA2}[1-i])
		addr, before, n := p.addr[1-i], received(1-i), 3
		answers := make(chan string, n)
		for range n {
			go func() {
				id := make([]byte, idLen)
				rand.Read(id)
				resp, err := hc.Post("https://"+addr+"/v1/account", "application/octet-stream", bytes.NewReader(id))
				if err != nil {
					answers <- err.Error()
					return
				}
				defer resp.Body.Close()
				msg, _ := io.ReadAll(resp.Body)
				// Retry-After: the client library sends it again (the call never ran).
				answers <- http.StatusText(resp.StatusCode) + " (Retry-After " + resp.Header.Get("Retry-After") + "): " + string(msg)
			}()
		}
		testutil.WaitFor(t, 30*time.Second, "the requests read", func() bool { return received(1-i) == before+n })
		start := time.Now()
		p.stop[1-i]()
		took := time.Since(start)
		t.Logf("server %d stopped in %v", 2-i, took)
		if took > 10*time.Second {
			t.Fatalf("server %d took %v to stop with %d requests waiting", 2-i, took, n)
		}
		for range n {
			if a := <-answers; !strings.HasPrefix(a, "Service Unavailable (Retry-After 1): ") || !strings.Contains(a, "shutting down") {
				t.Fatalf("a request waiting at server %d's shutdown: %q", 2-i, a)
			}
		}
	}
}
