package ksclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/testutil"
)

// A client given two replicas sharing Redis spreads its derivations over both, keeps
// deriving through the survivor when one stops, and the budget both replicas counted is
// one: 12 of 20 spent across the two, the survivor grants exactly the 8 left.
func TestReplicasFailoverSharedBudget(t *testing.T) {
	url := testutil.StartRedis(t)
	rl := keyserver.RateLimit{Mode: keyserver.ModeBounded, Q: 20, Epoch: time.Hour}
	dir := initDir(t, "ristretto255")
	a := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
	b := startKS(t, dir, keyserver.Config{RateLimit: rl, RateLimitStore: url})
	ctx := context.Background()
	c := a.client(a.cred("alice"), "https", ksclient.Options{URL: "https://" + a.ls.Addr(), Replicas: []string{"https://" + b.ls.Addr()}})
	for i := range 2 { // two requests: one to each replica in turn
		if _, err := c.DeriveKeys(ctx, digestsN(4, string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if ea, eb := a.metric("veil_ks_evaluations_total"), b.metric("veil_ks_evaluations_total"); !strings.HasSuffix(ea, " 4") || !strings.HasSuffix(eb, " 4") {
		t.Fatalf("evaluations per replica %s and %s, want 4 and 4 (spread)", ea, eb)
	}
	a.stop()
	if _, err := c.DeriveKeys(ctx, digestsN(4, "c")); err != nil {
		t.Fatalf("with one replica down: %v", err)
	}
	if _, err := c.DeriveKeys(ctx, digestsN(9, "d")); !errors.Is(err, ksclient.ErrRateLimited) {
		t.Fatalf("9 more of the 8 left: %v", err)
	}
	if _, err := c.DeriveKeys(ctx, digestsN(8, "e")); err != nil {
		t.Fatalf("the 8 left: %v", err)
	}
}
