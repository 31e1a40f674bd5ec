package keyserver

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Idle sessions end: pruned after the idle time, and a client at its limit gets a new
// session by evicting its idle ones; closing frees a slot at once, only for its owner.
func TestSessionsIdleExpiryAndClose(t *testing.T) {
	var ss sessions
	ss.init(10, 2)
	t0 := time.Unix(1_700_000_000, 0)
	idle := 5 * time.Minute
	mk := func(client string, used time.Time) *session {
		return &session{client: client, expiry: t0.Add(time.Hour), used: used}
	}
	id := func(b byte) (x [16]byte) { x[0] = b; return }
	if !ss.add(mk("alice", t0), id(1), t0, idle) || !ss.add(mk("alice", t0), id(2), t0, idle) {
		t.Fatal("first two sessions refused")
	}
	if ss.add(mk("alice", t0.Add(time.Minute)), id(3), t0.Add(time.Minute), idle) {
		t.Fatal("third session granted while two are in use")
	}
	later := t0.Add(idle + time.Second)
	if !ss.add(mk("alice", later), id(3), later, idle) {
		t.Fatal("idle sessions were not evicted for a new one")
	}
	if ss.len() != 1 {
		t.Fatalf("%d sessions after eviction, want 1", ss.len())
	}
	if ss.close(id(3), "bob") {
		t.Fatal("bob closed alice's session")
	}
	if !ss.close(id(3), "alice") || ss.len() != 0 {
		t.Fatal("alice could not close her session")
	}
	ss.add(mk("bob", t0), id(4), t0, idle)
	ss.prune(later, idle)
	if ss.len() != 0 {
		t.Fatal("prune kept an idle session")
	}
}

// A max datagram no UDP packet can carry (or below the minimum) is refused at start, not
// granted as a wrapped 16-bit number.
func TestOpenRefusesImpossibleLimits(t *testing.T) {
	for _, n := range []int{65536, 70000, 10} {
		_, err := Open(context.Background(), t.TempDir(), Config{MaxDatagram: n})
		if err == nil || !strings.Contains(err.Error(), "max datagram") {
			t.Errorf("max datagram %d: %v", n, err)
		}
	}
}
