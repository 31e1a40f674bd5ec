package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// A Limiter of one connection: a keep-alive connection idle since its request gives its
// slot to a new client (after ReclaimAfter, not two minutes of idle timeout), while a
// connection in a request keeps it until the request is done.
func TestLimiterReclaimsIdleNotBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	slow := make(chan struct{})
	srv := &http.Server{IdleTimeout: 2 * time.Minute, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-slow
		}
		io.WriteString(w, "ok")
	})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHTTP(ctx, srv, Limit(srv, ln, 1), time.Second) }()
	defer func() { cancel(); <-done }()
	url := "http://" + ln.Addr().String()
	get := func(c *http.Client, path string) error {
		resp, err := c.Get(url + path)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}
	idle := &http.Client{Transport: &http.Transport{}}
	if err := get(idle, "/"); err != nil { // then its connection stays open, idle
		t.Fatal(err)
	}
	other := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	start := time.Now()
	if err := get(other, "/"); err != nil {
		t.Fatalf("a second client with the one connection idle: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > ReclaimAfter+2*time.Second {
		t.Fatalf("a second client waited %v for the idle connection's slot", d)
	}
	busy := make(chan error, 1)
	go func() { busy <- get(&http.Client{Transport: &http.Transport{}}, "/slow") }()
	time.Sleep(ReclaimAfter + 500*time.Millisecond) // other's connection is idle long enough, then busy's takes its slot
	third := &http.Client{Transport: &http.Transport{}, Timeout: ReclaimAfter + time.Second}
	if err := get(third, "/"); err == nil {
		t.Fatal("a client got the only slot while a request held it")
	}
	close(slow)
	if err := <-busy; err != nil {
		t.Fatalf("the request holding the slot was cut: %v", err)
	}
}
