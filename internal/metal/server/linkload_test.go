package server

import (
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// TestLinkLoadsStateOnce: each server reads its whole state (every tree's shares: hundreds
// of MB at 2^20 files) once when the 2PC link comes up, and not when it opens (it used to
// read it at open for its parameters, then twice per link: for the ORAM and again for
// Metal-SHARE's capability key share). A redial reads it once more.
func TestLinkLoadsStateOnce(t *testing.T) {
	p := startPair(t)
	p.client(t) // the link is up
	for i, s := range p.srv {
		if n := s.store.Loads(); n != 1 {
			t.Fatalf("server %d read its state %d times for one link", i+1, n)
		}
	}
	p.restart(t, 1)
	testutil.WaitFor(t, 30*time.Second, "the 2PC link back", func() bool {
		return strings.Contains(get(t, p.dep, 1, "https://"+p.addr[1]+"/metrics"), "\nveil_metal_peer_up 1")
	})
	if n := p.srv[0].store.Loads(); n != 2 {
		t.Fatalf("server 1 read its state %d times for two links", n)
	}
	if n := p.srv[1].store.Loads(); n != 1 {
		t.Fatalf("restarted server 2 read its state %d times for one link", n)
	}
}
