package kserver

import (
	"bytes"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestMatchRecordNoncesNeverRepeat: match records are AES-GCM under the query's one-time
// key with nonce id[:12]. Pair ids are chosen by whoever publishes (an owner, or a
// V-server injecting a chunk), so two matched pairs may share their first 12 bytes; the
// K-server must never seal two records of one reply under the same nonce: with one key
// known to the attacker, the other (an advanced query's matched key) falls out as XOR.
func TestMatchRecordNoncesNeverRepeat(t *testing.T) {
	k := startK(t, t.TempDir())
	victim := id(1)
	planted := victim
	planted[15] ^= 0xff // same first 12 bytes
	const secret, known = "victim-secret-key.pdf", "planted-known-text.pdf-padding"
	k.publish(t, []wire.KeyItem{{ID: victim, Key: secret}})
	c, err := wire.SealChunk(k.pub, []wire.KeyItem{{ID: planted, Key: known}})
	if err != nil {
		t.Fatal(err)
	}
	_, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindPublish, Payload: wire.MarshalChunk(c)})
	if rr.Results[0].Status == wire.StatusOK {
		t.Error("a pair id sharing a held id's first 12 bytes was stored")
	}
	// State stored before publication refused such ids: the query must not use both.
	k.s.idx.Put(&wire.KeyItem{ID: planted, Key: known})

	q := newQuery(".pdf")
	q.Mode, q.Advanced = wire.ModeSubstring, true
	st, ms := k.search(t, q)
	if st != wire.StatusOK {
		t.Fatalf("status %d", st)
	}
	seen := map[[12]byte]bool{}
	var recs = map[wire.ID][]byte{}
	for _, m := range ms {
		n := [12]byte(m.ID[:12])
		if seen[n] {
			t.Errorf("two match records of one reply under nonce %x", n)
		}
		seen[n] = true
		recs[m.ID] = m.Record
	}
	if a, b := recs[victim], recs[planted]; a != nil && b != nil {
		rec := make([]byte, len(secret))
		for i := range rec {
			rec[i] = a[i] ^ b[i] ^ known[i]
		}
		if bytes.Equal(rec, []byte(secret)) {
			t.Errorf("matched key recovered without the one-time key: %q", rec)
		}
	}
}
