package testutil

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/server"
)

// IdleConnsGiveWay checks a server listening at url (https://host:port) that holds at
// most max connections (server.Limiter): max clients each leave a keep-alive connection
// idle after one request, and a new client's request must still be answered within a few
// seconds, not after the server's idle timeout. newClient makes a client that trusts the
// server (a fresh transport each call: one connection per client).
func IdleConnsGiveWay(t *testing.T, url string, max int, newClient func() *http.Client) {
	t.Helper()
	get := func(hc *http.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/healthz", nil)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	var idle []*http.Client
	defer func() {
		for _, hc := range idle {
			hc.CloseIdleConnections()
		}
	}()
	for range max {
		hc := newClient()
		if err := get(hc); err != nil {
			t.Fatalf("a request of a connection left idle: %v", err)
		}
		idle = append(idle, hc)
	}
	time.Sleep(server.ReclaimAfter)
	start := time.Now()
	hc := newClient()
	defer hc.CloseIdleConnections()
	for i := 0; i < 3; i++ { // back to back, on its one connection
		if err := get(hc); err != nil {
			t.Fatalf("a new client with %d connections idle at the server (its cap): %v after %v", max, err, time.Since(start))
		}
	}
}
