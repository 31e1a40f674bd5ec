package ksclient_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

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
	go func() {
		_, err := c.DeriveKeys(context.Background(), digestsN(1, "drain"))
		errc <- err
	}()
	time.Sleep(700 * time.Millisecond) // the query is at the server, waiting its 2 s delay
	t0 := time.Now()
	k.stop()
	if err := <-errc; err != nil {
		t.Fatalf("in-flight query during shutdown: %v", err)
	}
	if d := time.Since(t0); d < 500*time.Millisecond {
		t.Fatalf("Serve returned after %v, before the in-flight query finished", d)
	}
	// After stopping nothing answers.
	c2 := k.client(k.cred("bob"), "https", ksclient.Options{Timeout: 200 * time.Millisecond})
	if _, err := c2.DeriveKeys(context.Background(), digestsN(1, "x")); !errors.Is(err, ksclient.ErrKSUnavailable) {
		t.Fatalf("after stop: %v", err)
	}
}
