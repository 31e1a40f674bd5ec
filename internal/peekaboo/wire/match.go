package wire

import (
	"crypto/aes"
	"crypto/cipher"
)

// A match record proves to the client that the K-server matched a pair for its query and,
// in advanced mode, carries the matched key: AES-256-GCM under the one-time key with
// nonce = id[:12] and aad = "veil peekaboo v1 match" || request nonce || id.

const matchAAD = "veil peekaboo v1 match"

func matchAEAD(key *[32]byte) cipher.AEAD {
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 32-byte key cannot fail
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

func matchAD(nonce *[16]byte, id ID) []byte {
	ad := append([]byte(matchAAD), nonce[:]...)
	return append(ad, id[:]...)
}

// SealMatch makes the match record for id (key is empty in basic mode). Ids within one
// reply are distinct, so nonces never repeat under one one-time key.
func SealMatch(q *Query, id ID, key string) []byte {
	return matchAEAD(&q.OneTimeKey).Seal(nil, id[:12], []byte(key), matchAD(&q.Nonce, id))
}

// OpenMatch checks a match record and returns the key it carries ("" in basic mode).
func OpenMatch(q *Query, id ID, rec []byte) (string, error) {
	pt, err := matchAEAD(&q.OneTimeKey).Open(nil, id[:12], rec, matchAD(&q.Nonce, id))
	if err != nil {
		return "", ErrOpen
	}
	return string(pt), nil
}
