package ksclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/testutil"
)

// Bounded: q evaluations per epoch for one client, across its HTTPS connection and its
// UDP session together; another client keeps its own budget.
func TestBoundedAcrossSessions(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeBounded, Q: 10, Epoch: time.Hour}})
	checkBounded(t, k, k)
}

// checkBounded runs the bounded scenario with alice's two sessions on servers a and b
// (the same server, or two replicas sharing Redis).
func checkBounded(t *testing.T, a, b *ks) {
	ctx := context.Background()
	alice := a.cred("alice")
	bob := a.cred("bob")
	h := a.client(alice, "https", ksclient.Options{})
	u := b.client(alice, "udp", ksclient.Options{Timeout: 500 * time.Millisecond})
	if _, err := h.DeriveKeys(ctx, digestsN(4, "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.DeriveKeys(ctx, digestsN(4, "b")); err != nil {
		t.Fatal(err)
	}
	// 8 used: a batch of 3 would make 11 > 10, counted in evaluations, on either transport.
	if _, err := h.DeriveKeys(ctx, digestsN(3, "c")); !errors.Is(err, ksclient.ErrRateLimited) {
		t.Fatalf("https over budget: %v", err)
	}
	if _, err := u.DeriveKeys(ctx, digestsN(3, "c")); !errors.Is(err, ksclient.ErrRateLimited) {
		t.Fatalf("udp over budget: %v", err)
	}
	if _, err := u.DeriveKeys(ctx, digestsN(2, "d")); err != nil {
		t.Fatalf("last 2 of the budget: %v", err)
	}
	if _, err := h.DeriveKeys(ctx, digestsN(1, "e")); !errors.Is(err, ksclient.ErrRateLimited) {
		t.Fatalf("budget spent: %v", err)
	}
	// Bob is untouched.
	if _, err := b.client(bob, "https", ksclient.Options{}).DeriveKeys(ctx, digestsN(10, "f")); err != nil {
		t.Fatalf("other client limited: %v", err)
	}
}

// Two replicas sharing a real redis-server enforce one budget.
func TestBoundedSharedThroughRedis(t *testing.T) {
	url := testutil.StartRedis(t)
	rl := keyserver.RateLimit{Mode: keyserver.ModeBounded, Q: 10, Epoch: time.Hour}
	dir := initDir(t, "ristretto255")
	a := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
	b := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
	checkBounded(t, a, b)
}

// A restarted key server keeps its counters (graceful stop writes them to bbolt).
func TestCountersSurviveRestart(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeBounded, Q: 10, Epoch: time.Hour}})
	cred := k.cred("alice")
	ctx := context.Background()
	if _, err := k.client(cred, "https", ksclient.Options{}).DeriveKeys(ctx, digestsN(7, "a")); err != nil {
		t.Fatal(err)
	}
	k.restart()
	c := k.client(cred, "https", ksclient.Options{})
	if _, err := c.DeriveKeys(ctx, digestsN(4, "b")); !errors.Is(err, ksclient.ErrRateLimited) {
		t.Fatalf("after restart 7+4 > 10 was allowed: %v", err)
	}
	if _, err := c.DeriveKeys(ctx, digestsN(3, "c")); err != nil {
		t.Fatalf("after restart the remaining 3: %v", err)
	}
}

// race sends one query from each client concurrently and reports each outcome and time.
func race(t *testing.T, cs []*ksclient.Client, n int) ([]error, []time.Duration) {
	t.Helper()
	errs := make([]error, len(cs))
	durs := make([]time.Duration, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, errs[i] = c.DeriveKeys(context.Background(), digestsN(n, "race"))
			durs[i] = time.Since(start)
		}()
	}
	wg.Wait()
	return errs, durs
}

// Fixed delay: each evaluation waits t_D; while one query of a client is in flight a
// second one (from another session) is refused, and the client sends it again once the
// first is answered, so both succeed, one after the other; another client is not affected.
func TestFixedDelayOneInFlight(t *testing.T) {
	const tD = 300 * time.Millisecond
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeFixed, Delay: tD}})
	alice, bob := k.cred("alice"), k.cred("bob")
	o := ksclient.Options{Timeout: 5 * time.Second, Retries: 1}
	cs := []*ksclient.Client{k.client(alice, "https", o), k.client(alice, "https", o), k.client(bob, "https", o)}
	for _, c := range cs { // open the connections first, so the race is between queries, not handshakes
		if _, err := c.DeriveKeys(context.Background(), digestsN(1, "warm")); err != nil {
			t.Fatal(err)
		}
	}
	errs, durs := race(t, cs, 2)
	for i, e := range errs {
		if e != nil {
			t.Fatalf("query %d: %v (a refusal for one in flight must be waited out, not returned)", i, e)
		}
	}
	if m := k.metric(`veil_ks_rejections_total{reason="in_flight"`); m == "" {
		t.Fatal("alice's two concurrent queries: no in-flight refusal counted")
	}
	if last := max(durs[0], durs[1]); last < 4*tD {
		t.Fatalf("alice's two batches of 2 took %v, want >= 4*t_D: one at a time", last)
	}
	if durs[2] < 2*tD {
		t.Fatalf("bob's batch of 2 took %v, want >= 2*t_D", durs[2])
	}
	// Over UDP the second query is dropped (no answer): the client times out. If the UDP
	// query came first, the HTTPS one is refused and waits its turn.
	uo := ksclient.Options{Timeout: 400 * time.Millisecond, Retries: 1}
	errs, _ = race(t, []*ksclient.Client{k.client(alice, "https", ksclient.Options{Timeout: 3 * time.Second}),
		k.client(alice, "udp", uo)}, 1)
	if errs[0] != nil {
		t.Fatalf("https query beside a udp one: %v", errs[0])
	}
	if errs[1] != nil {
		if !errors.Is(errs[1], ksclient.ErrKSUnavailable) {
			t.Fatalf("udp query during an in-flight one: %v", errs[1])
		}
		if m := k.metric(`veil_ks_udp_drops_total{reason="in_flight"}`); m == "" {
			t.Fatal("in-flight drop not counted")
		}
	}
}

// Exponential delay: the delay doubles per evaluation up to t_U, per client.
func TestExponentialDelay(t *testing.T) {
	const start, tU = 40 * time.Millisecond, 160 * time.Millisecond
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeExp, Start: start, Max: tU, Epoch: time.Hour}})
	ctx := context.Background()
	alice := k.cred("alice")
	c := k.client(alice, "https", ksclient.Options{})
	var durs []time.Duration
	for i := range 4 {
		t0 := time.Now()
		if _, err := c.DeriveKeys(ctx, digestsN(1, string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	// Delays 40, 80, 160, 160 ms.
	for i, want := range []time.Duration{start, 2 * start, tU, tU} {
		if durs[i] < want {
			t.Fatalf("query %d took %v, want >= %v (all: %v)", i, durs[i], want, durs)
		}
	}
	// Upper bounds (capping at t_U, per-client state) are timing-sensitive on a shared
	// machine; keyserver's TestLimiterModes checks them exactly with an injected clock.
	// A batch of 3 costs 3 evaluations: at least 3*t_U for alice now.
	t0 := time.Now()
	if _, err := c.DeriveKeys(ctx, digestsN(3, "batch")); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 3*tU {
		t.Fatalf("batch of 3 took %v, want >= %v", d, 3*tU)
	}
	// Concurrency: one in flight; the client waits its turn instead of failing. (Two Client
	// values for alice: one Client merges its own concurrent calls into one request.)
	errs, _ := race(t, []*ksclient.Client{c, k.client(k.cred("alice2"), "https", ksclient.Options{}),
		k.client(alice, "https", ksclient.Options{})}, 3)
	for i, e := range errs {
		if e != nil {
			t.Fatalf("query %d under exp delay: %v", i, e)
		}
	}
	if m := k.metric(`veil_ks_rejections_total{reason="in_flight"`); m == "" {
		t.Fatal("alice's two concurrent queries under exp delay: no in-flight refusal counted")
	}
}

// The delay modes' one-query-in-flight rule holds across replicas sharing Redis.
func TestInFlightSharedThroughRedis(t *testing.T) {
	url := testutil.StartRedis(t)
	dir := initDir(t, "ristretto255")
	for _, rl := range []keyserver.RateLimit{
		{Mode: keyserver.ModeFixed, Delay: 300 * time.Millisecond},
		{Mode: keyserver.ModeExp, Start: 300 * time.Millisecond, Max: time.Second, Epoch: time.Hour},
	} {
		a := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
		b := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
		alice := a.cred("alice-" + rl.Mode)
		o := ksclient.Options{Timeout: 5 * time.Second, Retries: 1}
		ca, cb := a.client(alice, "https", o), b.client(alice, "https", o)
		for _, c := range []*ksclient.Client{ca, cb} { // connections first
			if _, err := c.DeriveKeys(context.Background(), digestsN(1, "warm")); err != nil {
				t.Fatal(err)
			}
		}
		errs, _ := race(t, []*ksclient.Client{ca, cb}, 2)
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("%s: alice on two replicas at once: %v, %v; want both answered, one after the other", rl.Mode, errs[0], errs[1])
		}
		refused := a.metric(`veil_ks_rejections_total{reason="in_flight"`) + b.metric(`veil_ks_rejections_total{reason="in_flight"`)
		if refused == "" {
			t.Fatalf("%s: alice on two replicas at once: neither replica refused one", rl.Mode)
		}
	}
}
