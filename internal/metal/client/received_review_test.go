package client

import (
	"bytes"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/share"
)

// Capabilities are bearer tokens without versions (docs/design-metal.md §6, Revocation): a
// read-only share of a file Bob already holds read+write for revokes nothing, and within
// one download the entries' order is a uniform shuffle (epochs). Recording both must leave
// Bob's profile able to write the file, whichever order the list gave them in: a later
// (or merely later-shuffled) read-only entry must not discard the read+write capability.
func TestReceivedKeepsTheWiderCapability(t *testing.T) {
	rw := share.Received{Capability: bytes.Repeat([]byte{1}, ac.CapabilityLen), File: 7, Perm: ac.Read | ac.Write, Index: 1}
	ro := share.Received{Capability: bytes.Repeat([]byte{2}, ac.CapabilityLen), File: 7, Perm: ac.Read, Index: 2}
	for _, order := range [][]share.Received{{rw, ro}, {ro, rw}} {
		p := &Profile{}
		for _, r := range order {
			p.AddReceived(r)
		}
		c, err := p.CapabilityFor(7)
		if err != nil || !bytes.Equal(c, rw.Capability) || len(p.Received) != 1 || p.Received[0].Perm != "rw" {
			t.Errorf("received %s then %s: the profile keeps %+v", PermString(order[0].Perm), PermString(order[1].Perm), p.Received)
		}
	}
}
