package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestSilentServer2InCallCut: Server 2 going silent in the middle of a call (a relay that
// stops forwarding and keeps its connections open: a stopped process or a cut network, no
// TCP reset) fails that call within the silence timeout, with one line naming Server 2 as
// silent, and the request queued behind it is answered at once (503, which the client
// library retries) instead of waiting for its turn. Both waited for the call timeout (a
// minute here, 5 minutes by default): the link cannot tell a silent Server 2 from a busy
// one, the liveness probe beside it can. Once the relay forwards again, calls work.
func TestSilentServer2InCallCut(t *testing.T) {
	const silence, callTimeout = time.Second, time.Minute
	p := startPairParams(t, 0, 2*time.Second, testParams, func(c *Config) { c.CallTimeout, c.SilenceTimeout = callTimeout, silence })
	r := viaRelay(t, p)
	c := p.client(t)
	waitLink(t, p, "1")
	ctx := context.Background()
	acc := writtenAccount(ctx, t, c, "x")

	// The relay freezes once a read's first garbled tables pass: the access has several
	// Runs and exchanges after that, for which Server 1 waits on Server 2.
	r.after.Store(64 << 10)
	type answer struct {
		err  error
		took time.Duration
	}
	got := make(chan answer, 1)
	start := time.Now()
	go func() {
		_, err := c.Read(ctx, acc.Capability, acc.First)
		got <- answer{err, time.Since(start)}
	}()
	testutil.WaitFor(t, 30*time.Second, "the relay frozen in the call", r.frozen.Load)
	st, msg, queued := half(t, p) // a request behind the frozen call
	a := <-got
	t.Logf("the frozen call: %v after %v; the request behind it: %d after %v: %s", a.err, a.took, st, queued, msg)
	if a.err == nil || !strings.Contains(a.err.Error(), "metal server 2 went silent") || strings.Contains(a.err.Error(), "\n") ||
		a.took > silence+4*time.Second {
		t.Fatalf("a call whose server 2 went silent: %v after %v (silence timeout %v, call timeout %v)", a.err, a.took, silence, callTimeout)
	}
	if st != http.StatusServiceUnavailable || !strings.Contains(msg, "cannot reach server 2 (metal server 2 went silent") || queued > silence+4*time.Second {
		t.Fatalf("a request queued behind the silent call: %d after %v: %q", st, queued, msg)
	}
	r.after.Store(0)
	r.frozen.Store(false)
	testutil.WaitFor(t, 30*time.Second, "an account after the relay forwards again", func() bool {
		_, err := c.CreateAccount(ctx)
		return err == nil
	})
}

// TestBusyServer2NotCut: a Server 2 that takes longer than the silence timeout to send
// each message (here its link writes are delayed by 1.2 s, against a silence timeout of
// 1 s at Server 1) is busy, not silent: it echoes on the probe, and its calls complete.
// A deadline per round on the link itself would have cut every one of them.
func TestBusyServer2NotCut(t *testing.T) {
	const silence = time.Second
	p := startPairParams(t, 0, 2*time.Second, testParams, func(c *Config) { c.SilenceTimeout = silence })
	p.tune = append(p.tune, func(c *Config) { c.LinkDelay = 1200 * time.Millisecond })
	p.restart(t, 1) // Server 2 only
	c := p.client(t)
	start := time.Now()
	if _, err := c.CreateAccount(context.Background()); err != nil {
		t.Fatalf("an account with a slow server 2: %v after %v", err, time.Since(start))
	}
	t.Logf("an account with server 2's messages 1.2 s late: %v", time.Since(start))
}

// TestServer2WithoutProbe: a Server 2 from before the liveness probe answers its upgrade
// 404; Server 1 keeps the link without it (a silent Server 2 is then noticed at the pair
// or call timeout, as before), and calls run, also well past the silence timeout.
func TestServer2WithoutProbe(t *testing.T) {
	const silence = 300 * time.Millisecond
	p := startPairParams(t, 0, 2*time.Second, testParams, func(c *Config) { c.SilenceTimeout = silence })
	p.srv[1].noLive.Store(true)
	p.restart(t, 0) // Server 1 dials again
	c := p.client(t)
	ctx := context.Background()
	for range 3 {
		if _, err := c.CreateAccount(ctx); err != nil {
			t.Fatalf("an account at a server 2 without the probe: %v", err)
		}
		time.Sleep(2 * silence)
	}
}
