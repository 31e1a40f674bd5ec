package wire

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// TestSealedSizeIndependentOfSecrets: the V-server sees sealed queries and publication
// items; their sizes must not depend on the query or key, nor on how many pseudonyms a
// query proves or an item allows (the V-server knows who granted whom, not which pairs
// are restricted or which pseudonyms a client presents).
func TestSealedSizeIndependentOfSecrets(t *testing.T) {
	k := mustKey(t)
	query := func(text string, proofs int) int {
		q := &Query{Mode: ModeExact, Limit: 1, Time: 1, Text: text}
		for i := 0; i < proofs; i++ {
			q.Prove(ed25519.NewKeyFromSeed(make([]byte, 32)))
		}
		b, err := SealQuery(k.Public(), q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenQuery(k, b); err != nil {
			t.Fatalf("%d-byte query, %d proofs: %v", len(text), proofs, err)
		}
		return len(b)
	}
	item := func(key string, pseudonyms int) int {
		c, err := SealChunk(k.Public(), []KeyItem{{Key: key, Pseudonyms: make([][32]byte, pseudonyms)}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenChunk(k, c); err != nil {
			t.Fatalf("%d-byte key, %d pseudonyms: %v", len(key), pseudonyms, err)
		}
		return len(c.Items[0])
	}
	long := strings.Repeat("a", MaxQuery)
	for _, text := range []string{"a", long} {
		for _, n := range []int{0, 1, MaxPseudonyms} {
			if got := query(text, n); got != SealedQuerySize() {
				t.Errorf("sealed query (%d bytes, %d proofs): %d bytes, want %d", len(text), n, got, SealedQuerySize())
			}
			if got := item(text, n); got != SealedItemSize() {
				t.Errorf("sealed item (%d-byte key, %d pseudonyms): %d bytes, want %d", len(text), n, got, SealedItemSize())
			}
		}
	}
}

// TestWrongSizeSealedRefused: the openers refuse any other size with a one-line error
// before trying to open.
func TestWrongSizeSealedRefused(t *testing.T) {
	k := mustKey(t)
	for _, n := range []int{0, SealedQuerySize() - 1, SealedQuerySize() + 1, encLen() + 1024 + 16, encLen() + 2048 + 16} {
		_, err := OpenQuery(k, make([]byte, n))
		if !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
			t.Errorf("sealed query of %d bytes: %v", n, err)
		}
	}
	c, err := SealChunk(k.Public(), []KeyItem{{Key: "a"}, {Key: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Items[1] = append(c.Items[1], 0)
	if _, err := OpenChunk(k, c); !errors.Is(err, ErrMalformed) || strings.Contains(err.Error(), "\n") {
		t.Errorf("item one byte long: %v", err)
	}
}
