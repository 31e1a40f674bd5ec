package sealedkey

import (
	"bytes"
	"testing"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/chacha20poly1305"
)

// The key is argon2id's, whether or not the heap is warmed first (warmHeap only moves
// where the pages come from): both sides of warmThresholdKiB.
func TestKeyIsArgon2idWithAndWithoutWarming(t *testing.T) {
	salt := [SaltSize]byte{1, 2, 3}
	for _, k := range []KDF{cheap, {Time: 1, MemoryKiB: warmThresholdKiB, Threads: 2}, {Time: 2, MemoryKiB: 2 * warmThresholdKiB, Threads: 4}} {
		want := argon2.IDKey([]byte("pass"), salt[:], k.Time, k.MemoryKiB, k.Threads, chacha20poly1305.KeySize)
		if got := k.key([]byte("pass"), salt); !bytes.Equal(got, want) {
			t.Errorf("%+v: key %x, argon2id %x", k, got, want)
		}
	}
}
