package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// relay is a TCP relay on loopback between Server 1 and Server 2's link (the TLS runs
// through it, end to end). Frozen, it stops forwarding in both directions and keeps its
// connections open, and takes new connections without ever answering: a Server 2 that is
// stopped (SIGSTOP) or behind a cut network, with no TCP reset.
type relay struct {
	ln     net.Listener
	to     string
	frozen atomic.Bool
	after  atomic.Int64                  // when positive: freeze once this many more bytes went to Server 2
	gate   atomic.Pointer[chan struct{}] // when set: new connections wait for it to close
	done   chan struct{}
	mu     sync.Mutex
	conns  []net.Conn
}

func newRelay(t *testing.T, to string) *relay {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, to: to, done: make(chan struct{})}
	t.Cleanup(func() {
		close(r.done)
		ln.Close()
		r.mu.Lock()
		for _, c := range r.conns {
			c.Close()
		}
		r.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.keep(c)
			if r.frozen.Load() {
				continue // accepted, never answered
			}
			go r.forward(c, r.gate.Load())
		}
	}()
	return r
}

// forward relays c to Server 2, once gate (if any) is closed.
func (r *relay) forward(c net.Conn, gate *chan struct{}) {
	if gate != nil {
		select {
		case <-*gate:
		case <-r.done:
			return
		}
	}
	s, err := net.Dial("tcp", r.to)
	if err != nil {
		c.Close()
		return
	}
	r.keep(s)
	go r.pipe(s, c, true)
	go r.pipe(c, s, false)
}

// hold makes new connections wait (Server 1's dial hangs in its TLS handshake) until the
// function returned is called.
func (r *relay) hold() (release func()) {
	g := make(chan struct{})
	r.gate.Store(&g)
	return sync.OnceFunc(func() { r.gate.Store(nil); close(g) })
}

func (r *relay) keep(c net.Conn) {
	r.mu.Lock()
	r.conns = append(r.conns, c)
	r.mu.Unlock()
}

// pipe copies from src to dst until frozen (then holds on to both until the test ends).
func (r *relay) pipe(dst, src net.Conn, toServer2 bool) {
	buf := make([]byte, 4096)
	for {
		n, err := src.Read(buf)
		if toServer2 && r.after.Load() > 0 && r.after.Add(-int64(n)) <= 0 {
			r.frozen.Store(true)
		}
		if r.frozen.Load() {
			<-r.done
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// viaRelay restarts Server 1 so that it reaches Server 2 through a relay; with held, the
// relay holds its first connections (Server 1's first attempt) until release is called.
func viaRelay(t *testing.T, p *pair) *relay { r, _ := viaRelayHeld(t, p, false); return r }

func viaRelayHeld(t *testing.T, p *pair, held bool) (r *relay, release func()) {
	r = newRelay(t, p.addr[1])
	release = func() {}
	if held {
		release = r.hold()
		t.Cleanup(release)
	}
	path := filepath.Join(p.dir[0], FilePeerCred)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pc PeerCred
	if err := json.Unmarshal(b, &pc); err != nil {
		t.Fatal(err)
	}
	pc.Endpoint = "https://" + r.ln.Addr().String()
	if b, err = json.Marshal(pc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	p.restart(t, 0)
	return r, release
}

// half sends Server 1 alone an account part with a fresh id; it returns the answer and
// how long it took.
func half(t *testing.T, p *pair) (int, string, time.Duration) {
	hc := httpClient(t, p.dep.CA1)
	hc.Timeout = 40 * time.Second
	defer hc.CloseIdleConnections()
	id := make([]byte, idLen)
	rand.Read(id)
	start := time.Now()
	st, msg := postMsg(hc, p.addr[0], "/v1/account", id)
	return st, msg, time.Since(start)
}

// TestServer2GoneAnswersAtOnce: with Server 2 gone (its process stopped, so the link is
// down and every redial is refused), a request at Server 1 is answered at once, 503 "cannot
// reach server 2 ... try again", and calls work again on their own once Server 2 is back.
// Server 1 kept such requests in its queue, which nobody took from while the link was
// down, for the call timeout (5 minutes).
func TestServer2GoneAnswersAtOnce(t *testing.T) {
	p := startPair(t)
	p.client(t)
	waitLink(t, p, "1")
	p.stop[1]()
	waitLink(t, p, "0")
	st, msg, took := half(t, p)
	t.Logf("answered %d after %v: %s", st, took, msg)
	if st != http.StatusServiceUnavailable || !strings.Contains(msg, "cannot reach server 2") || !strings.Contains(msg, "try again") ||
		strings.Count(strings.TrimSpace(msg), "\n") > 0 || took > 5*time.Second {
		t.Fatalf("a request at server 1 with server 2 gone: %d after %v: %q", st, took, msg)
	}
	p.restart(t, 1)
	waitLink(t, p, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.client(t).CreateAccount(ctx); err != nil {
		t.Fatalf("an account once server 2 is back: %v", err)
	}
}

// TestSilentServer2Bounded: Server 2 vanishing without a TCP reset (its process stopped,
// or the network between the servers cut: here a relay that stops forwarding and keeps
// the connections open) ends the link within the pair timeout between calls, and within
// the call timeout in a call. The link had no deadline: Server 1 waited forever, in a call
// or for a ping's echo, and every request queued behind it for its call timeout. Then the
// requests waiting at Server 1 are answered at once (503), and once the relay forwards
// again the link comes back on its own (Server 2 drops its silent link for the new one).
func TestSilentServer2Bounded(t *testing.T) {
	const pairTimeout, callTimeout = 2 * time.Second, 4 * time.Second
	p := startPairParams(t, 0, pairTimeout, testParams, func(c *Config) { c.CallTimeout = callTimeout })
	r := viaRelay(t, p)
	c := p.client(t)
	waitLink(t, p, "1")
	ctx := context.Background()
	if _, err := c.CreateAccount(ctx); err != nil {
		t.Fatal(err)
	}

	// Between calls: Server 1's next ping gets no echo.
	r.frozen.Store(true)
	start := time.Now()
	waitLink(t, p, "0")
	t.Logf("link down %v after the freeze", time.Since(start))
	if d := time.Since(start); d > pairTimeout+3*time.Second {
		t.Fatalf("a silent server 2 between calls noticed after %v (pair timeout %v)", d, pairTimeout)
	}
	if st, msg, took := half(t, p); st != http.StatusServiceUnavailable || !strings.Contains(msg, "cannot reach server 2") || took > 3*time.Second {
		t.Fatalf("a request while server 2 is silent: %d after %v: %q", st, took, msg)
	}
	r.frozen.Store(false)
	waitLink(t, p, "1")
	if _, err := c.CreateAccount(ctx); err != nil {
		t.Fatalf("an account after the relay forwards again: %v", err)
	}

	// In a call: the relay freezes once the call's first garbled tables pass.
	r.after.Store(64 << 10)
	cctx, cancel := context.WithTimeout(ctx, 40*time.Second)
	defer cancel()
	start = time.Now()
	_, err := c.CreateAccount(cctx)
	took := time.Since(start)
	t.Logf("a call frozen mid-way: %v after %v", err, took)
	if !r.frozen.Load() || err == nil || !strings.Contains(err.Error(), "stopped answering") || took > callTimeout+3*time.Second {
		t.Fatalf("a call whose server 2 went silent: %v after %v (frozen %v; call timeout %v)", err, took, r.frozen.Load(), callTimeout)
	}
	r.after.Store(0)
	r.frozen.Store(false)
	testutil.WaitFor(t, 30*time.Second, "an account after the frozen call", func() bool {
		_, err := c.CreateAccount(ctx)
		return err == nil
	})
}
