package ksclient_test

import (
	"context"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

// TestUnusableUDPAddressTakesNoSession: a client whose UDP address cannot be used (here a
// port out of range; a host name that does not resolve alike) fails each request in one
// line naming the address, and takes no UDP session from the key server. It asked for the
// session first: each request's grant held one of the client's sessions (64) until it
// idled out (5 minutes), after which the key server refused the client, on every device,
// any UDP session.
func TestUnusableUDPAddressTakesNoSession(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	c := k.client(k.cred("alice"), "udp", ksclient.Options{UDPAddr: "127.0.0.1:99999", Retries: 1})
	for i := range 3 {
		_, err := c.DeriveKeys(context.Background(), digestsN(1, string(rune('a'+i))))
		if err == nil || !strings.Contains(err.Error(), `udp address "127.0.0.1:99999"`) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if m := k.metric(`veil_ks_requests_total{result="ok",transport="session"}`); m != "" {
		t.Fatalf("sessions granted for an address the client cannot use: %s", m)
	}
}
