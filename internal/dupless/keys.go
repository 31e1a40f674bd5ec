package dupless

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"

	"crypto/cipher"
	"github.com/tink-crypto/tink-go/v2/daead/subtle"
	"golang.org/x/crypto/chacha20poly1305"
)

// MasterKeySize is the size of a user's master key.
const MasterKeySize = 32

// userKeys are the keys derived from the master key with HKDF-SHA256 (info strings in
// docs/formats/key-record.md).
type userKeys struct {
	names   *subtle.AESSIV // AES-SIV (64-byte key) for names
	records cipher.AEAD    // XChaCha20-Poly1305 for key records and directory metadata
	roots   cipher.AEAD    // XChaCha20-Poly1305 for tree roots
	cache   cipher.AEAD    // XChaCha20-Poly1305 for the local put cache (putcache.go)
	longMAC []byte         // HMAC-SHA256 key naming long names (longnames.go)
	long    *longNames     // long names seen or loaded, by tag
}

func deriveUserKeys(master []byte) (*userKeys, error) {
	if len(master) != MasterKeySize {
		return nil, fmt.Errorf("master key is %d bytes, want %d", len(master), MasterKeySize)
	}
	nk, err := hkdf.Key(sha256.New, master, nil, "veil/v1/names aes-siv", 64)
	if err != nil {
		return nil, err
	}
	rk, err := hkdf.Key(sha256.New, master, nil, "veil/v1/records xchacha20poly1305", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	tk, err := hkdf.Key(sha256.New, master, nil, "veil/v1/roots xchacha20poly1305", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	roots, err := chacha20poly1305.NewX(tk)
	if err != nil {
		return nil, err
	}
	siv, err := subtle.NewAESSIV(nk)
	if err != nil {
		return nil, err
	}
	aead, err := chacha20poly1305.NewX(rk)
	if err != nil {
		return nil, err
	}
	lk, err := hkdf.Key(sha256.New, master, nil, "veil/v1/long names hmac-sha256", 32)
	if err != nil {
		return nil, err
	}
	ck, err := hkdf.Key(sha256.New, master, nil, "veil/v1/put cache xchacha20poly1305", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	cache, err := chacha20poly1305.NewX(ck)
	if err != nil {
		return nil, err
	}
	return &userKeys{names: siv, records: aead, roots: roots, cache: cache, longMAC: lk, long: newLongNames()}, nil
}
