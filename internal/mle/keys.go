package mle

import (
	"context"
	"crypto/subtle"
	"fmt"
)

// Size of keys, digests and tags in bytes.
const Size = 32

// Key is an MLE message key K.
type Key [Size]byte

// Digest is H(M), the hash of a message under a suite's hash function. Key derivation is a
// function of the digest only, so it can be done by a key server that never sees M.
type Digest [Size]byte

// Tag is an MLE tag T: equal messages give equal tags (tag correctness).
type Tag [Size]byte

// KeyDeriver turns message digests into message keys: KeyGen(M) = Derive(H(M)). It is
// batched so a server-aided deriver can answer many digests in one round trip. Derive
// must be deterministic: the same digest always yields the same key.
//
// LocalKeys is plain MLE (K = H(M), as the slides define it); internal/ksclient derives
// K = OPRF(Ks, H(M)) through the key server.
type KeyDeriver interface {
	DeriveKeys(ctx context.Context, digests []Digest) ([]Key, error)
}

// LocalKeys is plain message-locked key generation: K = H(M), the digest itself.
type LocalKeys struct{}

// DeriveKeys returns each digest as the key.
func (LocalKeys) DeriveKeys(_ context.Context, ds []Digest) ([]Key, error) {
	ks := make([]Key, len(ds))
	for i, d := range ds {
		ks[i] = Key(d)
	}
	return ks, nil
}

// Guard is the check of guarded decryption: given H(M') of the recovered message and the
// key used, it reports whether K = KeyGen(M'). It returns nil to accept.
type Guard func(d Digest, k Key) error

// GuardLocal accepts iff k = d, the guard for LocalKeys.
func GuardLocal(d Digest, k Key) error {
	if subtle.ConstantTimeCompare(d[:], k[:]) != 1 {
		return fmt.Errorf("%w: key does not match the decrypted message", ErrIntegrity)
	}
	return nil
}

// GuardDigest accepts iff the recovered message hashes to want. A server-aided client
// that cannot ask the key server again at read time keeps H(M) in its (encrypted) key
// record and guards with it: since K was derived from that digest, H(M') = H(M) implies
// K = KeyGen(M').
func GuardDigest(want Digest) Guard {
	return func(d Digest, _ Key) error {
		if subtle.ConstantTimeCompare(d[:], want[:]) != 1 {
			return fmt.Errorf("%w: decrypted message does not match its recorded hash", ErrIntegrity)
		}
		return nil
	}
}
