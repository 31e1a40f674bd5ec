package local

import (
	"context"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestPseudonymAccessControl: a pair restricted to a pseudonym matches only for the client
// that proves it; the K-server enforces it without learning who the client is; others get
// the no-match reply, byte for byte the same size; a proof lifted into another query fails.
func TestPseudonymAccessControl(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	ctx := context.Background()
	alice, bob, carol := newClient(t, d, "alice"), newClient(t, d, "bob"), newClient(t, d, "carol")
	for _, c := range []*client.Client{bob, carol} {
		if err := c.RegisterClientKey(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.Grant(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	pub, _ := alice.PseudonymPub("bob")
	pairs := []client.Pair{{Key: "restricted.doc", Value: []byte("v"), Pseudonyms: [][32]byte{pub}}}
	if _, err := alice.Publish(ctx, pairs, 0, nil); err != nil {
		t.Fatal(err)
	}
	if r := search(t, bob, "restricted.doc", client.SearchOptions{}); len(r.Found) != 0 {
		t.Fatal("matched without a pseudonym proof")
	}
	ps, err := bob.FetchPseudonyms(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("bob's pseudonyms: %d %v", len(ps), err)
	}
	r := search(t, bob, "restricted.doc", client.SearchOptions{Pseudonyms: ps})
	if len(r.Found) != 1 {
		t.Fatalf("with the pseudonym: %d results", len(r.Found))
	}
	cps, err := carol.FetchPseudonyms(ctx)
	if err != nil || len(cps) != 0 {
		t.Fatalf("carol's pseudonyms: %d %v", len(cps), err)
	}
	denied := search(t, carol, "restricted.doc", client.SearchOptions{Pseudonyms: cps})
	none := search(t, carol, "nothing-here", client.SearchOptions{})
	if len(denied.Found) != 0 || denied.ReplyBytes != none.ReplyBytes {
		t.Fatalf("carol: %d results, %d bytes vs %d", len(denied.Found), denied.ReplyBytes, none.ReplyBytes)
	}
	// A proof copied from bob's query into carol's query does not verify.
	bq, _ := bob.NewQuery("restricted.doc", client.SearchOptions{Pseudonyms: ps})
	cq, _ := carol.NewQuery("restricted.doc", client.SearchOptions{})
	cq.Proofs = bq.Proofs
	if len(cq.Verified()) != 0 {
		t.Fatal("a lifted pseudonym proof verified")
	}
	e := newEvilV(t, d, true)
	sealed, _ := wire.SealQuery(e.kpub, cq)
	_, rs := e.send(wire.RelayItem{Kind: wire.KindQuery, Payload: sealed})
	if ms, _ := wire.ParseMatches(rs[0].Payload); rs[0].Status != wire.StatusOK || len(ms) != 0 {
		t.Fatalf("lifted proof: status %d, %d matches", rs[0].Status, len(ms))
	}
}
