package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/server"
)

// TestIdleConnsDoNotHoldSlots: keep-alive connections that finished their requests and
// stay open (here one client address's, six at each server, which takes six) give up
// their slot when the server needs it, so an honest client is served at once, and its
// next calls, reusing its connections, are not cut. They held it until the idle timeout
// (two minutes), and the honest client waited that long to connect.
func TestIdleConnsDoNotHoldSlots(t *testing.T) {
	const maxConns = 6
	p := startPairParams(t, 0, 10*time.Second, testParams, func(c *Config) { c.MaxConns = maxConns })
	waitLink(t, p, "1")
	var idle []*http.Client
	for i := range p.addr {
		n := maxConns
		if i == 1 {
			n -= 2 // the 2PC link and its liveness probe hold two of Server 2's
		}
		for range n {
			hc := httpClientFrom(t, []string{p.dep.CA1, p.dep.CA2}[i], flooder)
			if st, msg := getMsg(hc, "https://"+p.addr[i]+"/healthz"); st != http.StatusOK {
				t.Fatalf("server %d: an idle connection's request: %d %s", i+1, st, msg)
			}
			idle = append(idle, hc)
		}
	}
	time.Sleep(server.ReclaimAfter)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	c := p.client(t)
	a, err := c.CreateAccount(ctx)
	for i := 0; err == nil && i < 5; i++ { // back to back, on the same connections
		_, err = c.Read(ctx, a.Capability, a.First)
	}
	if err != nil {
		t.Fatalf("an honest client with every connection idle at the servers: %v after %v", err, time.Since(start))
	}
	t.Logf("six calls in %v", time.Since(start))
	for _, hc := range idle {
		hc.CloseIdleConnections()
	}
}

// getMsg is a GET's status and body (the request's error, status 0, if it failed).
func getMsg(hc *http.Client, url string) (int, string) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b := make([]byte, 512)
	n, _ := resp.Body.Read(b)
	return resp.StatusCode, string(b[:n])
}
