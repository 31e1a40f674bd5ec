package ksclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

// waitInFlight waits until the server reports a query being processed (its
// veil_ks_queries_in_flight gauge), which in a delay mode lasts the whole t_D.
func (k *ks) waitInFlight() {
	k.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := k.metric("veil_ks_queries_in_flight "); m != "" && !strings.HasSuffix(m, " 0") {
			return
		}
	}
	k.t.Fatal("no query in flight at the server after 30s")
}

// Graceful stop: a query in flight when the server is told to stop is still answered,
// and Serve returns only after it.
func TestGracefulStopDrainsInFlight(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeFixed, Delay: 2 * time.Second}})
	c := k.client(k.cred("alice"), "https", ksclient.Options{Retries: 1, Timeout: 5 * time.Second})
	if _, err := c.DeriveKeys(context.Background(), digestsN(1, "warm")); err != nil { // opens the connection
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	sent := time.Now() // the server cannot answer before sent + t_D
	go func() {
		_, err := c.DeriveKeys(context.Background(), digestsN(1, "drain"))
		errc <- err
	}()
	k.waitInFlight() // the query is at the server, waiting its t_D
	k.stop()
	if d := time.Since(sent); d < 2*time.Second {
		t.Fatalf("Serve returned %v after the query was sent, before its t_D of 2s was over", d)
	}
	if err := <-errc; err != nil {
		t.Fatalf("in-flight query during shutdown: %v", err)
	}
	// After stopping nothing answers.
	c2 := k.client(k.cred("bob"), "https", ksclient.Options{Timeout: 200 * time.Millisecond})
	if _, err := c2.DeriveKeys(context.Background(), digestsN(1, "x")); !errors.Is(err, ksclient.ErrKSUnavailable) {
		t.Fatalf("after stop: %v", err)
	}
}

// While another query of the client holds the one-at-a-time turn, a caller whose context
// ends stops waiting at once: its deadline holds whatever the other query takes.
func TestWaitingForTurnHonoursContext(t *testing.T) {
	const tD = 3 * time.Second
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeFixed, Delay: tD}})
	c := k.client(k.cred("alice"), "udp", ksclient.Options{Timeout: 10 * time.Second, Retries: 1}) // udp: one at a time
	go c.DeriveKeys(context.Background(), digestsN(1, "a"))
	k.waitInFlight()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.DeriveKeys(ctx, digestsN(1, "b"))
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > tD/2 {
		t.Fatalf("a 100 ms context waiting behind a %v query: %v after %v", tD, err, took)
	}
}
