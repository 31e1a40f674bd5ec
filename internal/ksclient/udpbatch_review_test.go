package ksclient_test

import (
	"context"
	"testing"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/mle"
)

// Over UDP, a key server whose MaxBatch is below what fits in a datagram refuses a
// larger request (error code 0x05, batch too large): the client halves its requests as it
// does on HTTPS's 413, and gets every key, each the one HTTPS derives. Found by review:
// the UDP refusal was code 0x03 (bad request) and failed the put.
func TestDeriveSplitsForSmallerServerBatchUDP(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxBatch: 5})
	alice := k.cred("alice")
	c := k.client(alice, "udp", ksclient.Options{MaxBatch: 64})
	ctx := context.Background()
	ds := digestsN(23, "small-batch-udp")
	keys, err := c.DeriveKeys(ctx, ds)
	if err != nil {
		t.Fatalf("derive 23 digests over UDP from a key server taking 5 per request: %v", err)
	}
	ref := k.client(alice, "https", ksclient.Options{MaxBatch: 1})
	for i, d := range ds {
		want, err := ref.DeriveKeys(ctx, []mle.Digest{d})
		if err != nil {
			t.Fatal(err)
		}
		if keys[i] != want[0] {
			t.Fatalf("digest %d: split derivation over UDP gave another key", i)
		}
	}
	if _, err := c.DeriveKeys(ctx, digestsN(9, "again-udp")); err != nil {
		t.Fatalf("a later derivation: %v", err)
	}
}
