package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestShortServer2RestartRetried: a call made while Server 2 is down (its process stopped:
// the client's connection to it is refused, and Server 1 answers 503 "cannot reach server
// 2 ... try again" at once) is tried again by the client library, with backoff and jitter,
// and succeeds once Server 2 is back within Client.UnreachableRetry. Users saw the 503 at
// once. Past the bound the call fails with one line naming the server and how long it was
// tried. Server 1's 503 carries Retry-After.
func TestShortServer2RestartRetried(t *testing.T) {
	p := startPair(t)
	waitLink(t, p, "1")
	c := p.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := writtenAccount(ctx, t, c, "before the restart")

	p.stop[1]()
	waitLink(t, p, "0")
	hc := httpClient(t, p.dep.CA1)
	resp, err := hc.Post("https://"+p.addr[0]+"/v1/account", "application/octet-stream", strings.NewReader(strings.Repeat("r", idLen)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("server 1 with server 2 gone answers %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}

	const down = 1500 * time.Millisecond
	type answer struct {
		b    []byte
		err  error
		took time.Duration
	}
	got := make(chan answer, 1)
	start := time.Now()
	go func() {
		b, err := c.Read(ctx, a.Capability, a.First)
		got <- answer{b, err, time.Since(start)}
	}()
	time.Sleep(down)
	p.restart(t, 1)
	r := <-got
	t.Logf("a read during a %v restart of server 2: %v after %v", down, r.err, r.took)
	if r.err != nil || !strings.HasPrefix(string(r.b), "before the restart") {
		t.Fatalf("a read during a short restart of server 2: %q, %v after %v", r.b, r.err, r.took)
	}
	if r.took < down {
		t.Fatalf("the read took %v, less than server 2 was down (%v)", r.took, down)
	}

	// Past the bound: one line, the server's answer or its refused connection, and how
	// long it was tried.
	c.UnreachableRetry = time.Second
	waitLink(t, p, "1")
	p.stop[1]()
	waitLink(t, p, "0")
	start = time.Now()
	_, err = c.Read(ctx, a.Capability, a.First)
	took := time.Since(start)
	t.Logf("with server 2 gone: %v after %v", err, took)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "(tried for 1s)") ||
		!(strings.Contains(err.Error(), "cannot reach server 2") || strings.Contains(err.Error(), "metal server 2: ") && strings.Contains(err.Error(), "connection refused")) ||
		took < time.Second || took > 5*time.Second {
		t.Fatalf("a read with server 2 gone past the bound: %v after %v", err, took)
	}
}

// TestShortServer1RestartRetried: a call made while Server 1 restarts (its connection
// refused while its process is down) is tried again by the client library, as for Server
// 2, and succeeds once Server 1 is back and has its link; it failed at once with
// "connection refused". The request never reached Server 1, and Server 2 runs only the ids
// Server 1 announces, so the call cannot have run: trying it again cannot run it twice.
// Past the bound the call fails with one line naming Server 1 and how long it was tried.
// The sharing keys' GET is retried too.
func TestShortServer1RestartRetried(t *testing.T) {
	p := startPair(t)
	waitLink(t, p, "1")
	c := p.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := writtenAccount(ctx, t, c, "before the restart")

	p.stop[0]()
	// The client's idle connection to Server 1, closed by its shutdown, is dropped once the
	// client reads the close: a request written on it before then gets EOF, which is not
	// retried (a server killed in a call answers the same way).
	time.Sleep(100 * time.Millisecond)
	const down = 1500 * time.Millisecond
	type answer struct {
		err  error
		took time.Duration
	}
	got := make(chan answer, 1)
	start := time.Now()
	go func() {
		err := c.Write(ctx, a.Capability, a.First, []byte("during the restart"))
		got <- answer{err, time.Since(start)}
	}()
	time.Sleep(down)
	p.restart(t, 0)
	r := <-got
	t.Logf("a write during a %v restart of server 1: %v after %v", down, r.err, r.took)
	if r.err != nil || r.took < down {
		t.Fatalf("a write during a short restart of server 1: %v after %v", r.err, r.took)
	}
	b, err := c.Read(ctx, a.Capability, a.First)
	if err != nil || !strings.HasPrefix(string(b), "during the restart") {
		t.Fatalf("read after the retried write: %q, %v", b, err)
	}

	// The sharing keys (a plain GET, before a send) are fetched the same way.
	p.stop[0]()
	time.Sleep(100 * time.Millisecond)
	keys := make(chan error, 1)
	go func() {
		_, _, err := c.ShareKeys(ctx)
		keys <- err
	}()
	time.Sleep(down)
	p.restart(t, 0)
	if err := <-keys; err != nil {
		t.Fatalf("the sharing keys during a short restart of server 1: %v", err)
	}
	waitLink(t, p, "1")

	c.UnreachableRetry = time.Second
	p.stop[0]()
	time.Sleep(100 * time.Millisecond) // as above
	start = time.Now()
	_, err = c.Read(ctx, a.Capability, a.First)
	took := time.Since(start)
	t.Logf("with server 1 gone: %v after %v", err, took)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "(tried for 1s)") ||
		!strings.Contains(err.Error(), "metal server 1: ") || !strings.Contains(err.Error(), "connection refused") ||
		took < time.Second || took > 5*time.Second {
		t.Fatalf("a read with server 1 gone past the bound: %v after %v", err, took)
	}
}
