package testutil

import (
	"net"
	"testing"
)

// FreePort's ports lie below the kernel's ephemeral range, so no connection made in the
// meantime takes one before the test's server binds it (they came from that range, by
// listening on port 0), are never returned twice, and can be bound.
func TestFreePortOutsideEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t)
		if port < freePortMin || port >= lo || seen[port] {
			t.Fatalf("FreePort gave %d (ephemeral ports from %d; given before: %v)", port, lo, seen[port])
		}
		seen[port] = true
	}
	for port := range seen {
		l, err := net.Listen("tcp", Addr(port))
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
		break
	}
}
