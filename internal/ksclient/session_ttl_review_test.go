package ksclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

// A key server with short UDP sessions (--session-ttl 20s) grants sessions the client can
// use for their whole life: the client must not throw each one away and open a new one
// (a mutual-TLS POST plus a DELETE) for every request because it "expires within 30 s".
func TestShortSessionTTLSessionReused(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{SessionTTL: 20 * time.Second})
	c := k.client(k.cred("alice"), "udp", ksclient.Options{})
	for i := range 3 {
		if _, err := c.DeriveKeys(context.Background(), digestsN(1, string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	if m := k.metric(`veil_ks_requests_total{result="ok",transport="session"}`); m != `veil_ks_requests_total{result="ok",transport="session"} 1` {
		t.Fatalf("three requests within a 20 s session opened sessions: %q, want 1", m)
	}
}
