package client

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/veil-project/veil/internal/sealedkey"
)

// metal.json is sealed (docs/formats/metal-profile.md): a random 32-byte file key sealed
// under the profile's passphrase as a Format of internal/sealedkey (argon2id, then
// XChaCha20-Poly1305), then the profile's JSON under the file key:
//
//	sealed file key (profileKeyFormat.Size()) | nonce [24] | XChaCha20-Poly1305(file key, JSON)
//
// with every byte before the ciphertext as associated data. Saving re-encrypts the JSON
// under the same file key (fresh nonce), so a command runs argon2id once.
var profileKeyFormat = sealedkey.Format{
	Name: "Metal profile", Magic: "veil-metal", Version: 1, SecretLen: chacha20poly1305.KeySize, NonceInAD: true,
	MaxTime: 100, MaxMemoryKiB: 4 << 20, // bounds for a hostile file, as the veil key file's
}

// DefaultKDF is the veil key file's cost (about 0.2 s and 64 MiB on a 2-core machine).
var DefaultKDF = sealedkey.KDF{Time: 3, MemoryKiB: 64 << 10, Threads: 4}

var kdf = DefaultKDF

// TestOnlyUseLowCostKDF makes new sealings cheap. Tests only: it weakens every profile
// sealed afterwards in this process.
func TestOnlyUseLowCostKDF() { kdf = sealedkey.KDF{Time: 1, MemoryKiB: 64, Threads: 1} }

// sealing is an open profile's file key and its sealed form.
type sealing struct {
	record []byte // the file key sealed under the passphrase
	key    []byte
}

func newSealing(pass []byte) (*sealing, error) {
	s := &sealing{key: make([]byte, chacha20poly1305.KeySize)}
	h := &sealedkey.Header{KDF: kdf}
	nonce := make([]byte, chacha20poly1305.NonceSizeX)
	for _, b := range [][]byte{s.key, h.Salt[:], nonce} {
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
	}
	var err error
	s.record, err = profileKeyFormat.Seal(h, pass, s.key, nonce)
	return s, err
}

// isSealed tells a sealed metal.json from the unsealed JSON of earlier versions.
func isSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(profileKeyFormat.Magic)) }

// openSealed opens a sealed metal.json with pass.
func openSealed(b, pass []byte) (*sealing, []byte, error) {
	n := profileKeyFormat.Size()
	if len(b) < n+chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead {
		return nil, nil, fmt.Errorf("%s: unreadable (%d bytes, truncated)", ProfileFile, len(b))
	}
	_, key, err := profileKeyFormat.Open(b[:n], pass)
	switch {
	case errors.Is(err, sealedkey.ErrWrongPassphrase):
		return nil, nil, fmt.Errorf("%s: wrong passphrase (or the file is damaged)", ProfileFile)
	case err != nil:
		return nil, nil, fmt.Errorf("%s: %w", ProfileFile, err)
	}
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, nil, err
	}
	ad := b[:n+chacha20poly1305.NonceSizeX]
	plain, err := aead.Open(nil, ad[n:], b[len(ad):], ad)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: damaged (its profile does not authenticate)", ProfileFile)
	}
	return &sealing{record: bytes.Clone(b[:n]), key: key}, plain, nil
}

// seal encrypts plain under the file key with a fresh nonce.
func (s *sealing) seal(plain []byte) ([]byte, error) {
	aead, err := chacha20poly1305.NewX(s.key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, chacha20poly1305.NonceSizeX)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	ad := append(bytes.Clone(s.record), nonce...)
	return aead.Seal(ad, nonce, plain, ad), nil
}
