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

// TestGivingUpInDelayModeSaysDelayed: a key server in a delay mode answers one query of a
// client at a time, each after t_D. A client whose patience ends first (its timeout t_R
// per attempt, Retries attempts) gives up with a DelayedError naming its timeout and
// attempts: "key server delayed its answer past this client's timeout (...)". It said
// "key server rate limit reached (a query of this client is already in flight)" when the
// key server had refused it for the query in flight (here alice's other Client's), and,
// once it knew the key server delays, "key server unavailable" when its own attempts timed
// out. It is still a rate limit (errors.Is ErrRateLimited), not a key server down.
func TestGivingUpInDelayModeSaysDelayed(t *testing.T) {
	const tD = 1500 * time.Millisecond
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{Mode: keyserver.ModeFixed, Delay: tD}})
	alice := k.cred("alice")
	patient := k.client(alice, "https", ksclient.Options{Timeout: 10 * time.Second, Retries: 1})
	hasty := k.client(alice, "https", ksclient.Options{Timeout: 200 * time.Millisecond, Retries: 2})
	ctx := context.Background()
	want := "key server delayed its answer past this client's timeout (200ms per attempt, 2 attempts, gave up after "
	check := func(what string, err error) {
		t.Helper()
		var d *ksclient.DelayedError
		if !errors.As(err, &d) || !errors.Is(err, ksclient.ErrRateLimited) || errors.Is(err, ksclient.ErrKSUnavailable) ||
			!strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v; want a DelayedError, %q...", what, err, want)
		}
		t.Logf("%s: %v", what, err)
	}
	// Another query of alice's is in flight: hasty is refused until its patience ends.
	done := make(chan error, 1)
	go func() { _, err := patient.DeriveKeys(ctx, digestsN(1, "slow")); done <- err }()
	waitInFlight(t, k)
	_, err := hasty.DeriveKeys(ctx, digestsN(1, "refused"))
	check("a query while another is in flight", err)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// hasty knows the key server delays: its attempts that time out say so too.
	_, err = hasty.DeriveKeys(ctx, digestsN(1, "timed out"))
	check("attempts past the timeout", err)
}

// waitInFlight waits until the key server holds a query in its delay.
func waitInFlight(t *testing.T, k *ks) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for k.metric("veil_ks_queries_in_flight 1") == "" {
		if time.Now().After(deadline) {
			t.Fatal("no query in flight within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
