package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/client"
	"github.com/veil-project/veil/internal/metal/share"
	"github.com/veil-project/veil/internal/testutil"
)

// TestShareThroughServers: two real servers on loopback TLS. Alice writes a file and shares
// it with an anonym Bob made offline; Server 1 restarts (the list entry is on its disk);
// Bob receives and reads the file, cannot write it; a forged anonym is refused; each
// server saw only its own ciphertext of each rerandomized anonym, never the anonym Bob made.
func TestShareThroughServers(t *testing.T) {
	p := startPair(t)
	ctx := context.Background()
	c := p.client(t)
	alice, err := c.CreateAccount(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bobAcct, _ := c.CreateAccount(ctx)
	bob, err := c.Enroll(ctx, bobAcct.Capability)
	if err != nil {
		t.Fatal(err)
	}
	pk1, pk2, err := c.ShareKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	an, err := share.NewAnonym(bob, 0, pk1, pk2, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	only := func(capability []byte) client.CapabilityFunc {
		return func(uint64) ([]byte, error) { return capability, nil }
	}
	if _, err := c.WriteFile(ctx, only(alice.Capability), alice.First+1, []byte("for bob"), client.FileOptions{}); err != nil {
		t.Fatal(err)
	}
	req := share.SendRequest{Capability: alice.Capability, File: alice.First + 1, Perm: ac.Read, To: an}
	if err := c.SendCapability(ctx, req, pk1, pk2); err != nil {
		t.Fatal(err)
	}
	forged := an
	forged.C2, _ = pk2.AddPlain(rand.Reader, an.C2, bigOne())
	// A forged anonym: the sender's verdict covers its own capability only (the anonym's
	// would be an oracle on Bob's secret); its entry opens for nobody (bob receives one).
	if err := c.SendCapability(ctx, share.SendRequest{Capability: alice.Capability, File: alice.First, Perm: ac.Read, To: forged}, pk1, pk2); err != nil {
		t.Fatalf("forged anonym: %v", err)
	}
	p.restart(t, 0)
	testutil.WaitFor(t, 30*time.Second, "the 2PC link back", func() bool {
		return strings.Contains(get(t, p.dep, 0, "https://"+p.addr[0]+"/metrics"), "\nveil_metal_peer_up 1")
	})
	c = p.client(t)
	got, lr, err := c.ReceiveCapabilities(ctx, bobAcct.Capability, bob.BK, 0)
	if err != nil || len(got) != 1 || len(lr.Entries) != 2 || got[0].File != alice.First+1 {
		t.Fatalf("bob received %+v of %d entries, %v", got, len(lr.Entries), err)
	}
	data, _, err := c.ReadFile(ctx, only(got[0].Capability), alice.First+1, client.FileOptions{})
	if err != nil || string(data) != "for bob" {
		t.Fatalf("bob reads %q, %v", data, err)
	}
	if _, _, err := c.ReadFile(ctx, only(got[0].Capability), alice.First, client.FileOptions{}); err == nil {
		t.Fatal("bob read alice's other file")
	}
	c1, c2 := an.Marshal()[1:513], an.Marshal()[513:]
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, bodies := range p.bodies {
		for _, b := range bodies {
			if bytes.Contains(b, c1[:64]) || bytes.Contains(b, c2[:64]) {
				t.Fatalf("server %d received the anonym as Bob made it (not rerandomized)", i+1)
			}
			if bytes.Contains(b, alice.Capability[:16]) {
				t.Fatalf("server %d received alice's capability in the clear", i+1)
			}
		}
	}
	m := get(t, p.dep, 1, "https://"+p.addr[1]+"/metrics")
	if !strings.Contains(m, `veil_metal_calls_total{kind="share-send",result="ok"} 2`) {
		t.Fatalf("server 2 metrics:\n%s", m)
	}
}

func bigOne() *big.Int { return new(big.Int).Lsh(big.NewInt(1), share.MACBits) }
