package wire

import (
	"crypto/hpke"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// The HPKE suite: ML-KEM-768+X25519 (hybrid post-quantum), HKDF-SHA256, AES-256-GCM.
const (
	KEMID  = 0x647a
	KDFID  = 0x0001
	AEADID = 0x0002
)

// HPKE info strings, one per purpose, so a sealed query can never be opened as a
// publication or the other way round.
const (
	infoQuery   = "veil peekaboo v1 query"
	infoPublish = "veil peekaboo v1 publish"
)

func kem() hpke.KEM     { return hpke.MLKEM768X25519() }
func kdf() hpke.KDF     { return hpke.HKDFSHA256() }
func aead() hpke.AEAD   { return hpke.AES256GCM() }
func publicKeyLen() int { return 1184 + 32 }
func encLen() int       { return 1088 + 32 }

// parsePub deserialises a public key; fuzz tests stub it (the standard library's ML-KEM
// parser runs at about one call per second under fuzzing instrumentation).
var parsePub = func(b []byte) (hpke.PublicKey, error) { return kem().NewPublicKey(b) }

// KServerKey is the K-server's HPKE key pair.
type KServerKey struct{ priv hpke.PrivateKey }

// KServerPub is the K-server's HPKE public key, pinned by clients.
type KServerPub struct{ pub hpke.PublicKey }

// GenerateKServerKey makes a fresh key pair.
func GenerateKServerKey() (*KServerKey, error) {
	k, err := kem().GenerateKey()
	if err != nil {
		return nil, err
	}
	return &KServerKey{k}, nil
}

// DeriveKServerKey derives a key pair from ikm (test vectors only).
func DeriveKServerKey(ikm []byte) (*KServerKey, error) {
	k, err := kem().DeriveKeyPair(ikm)
	if err != nil {
		return nil, err
	}
	return &KServerKey{k}, nil
}

// Public returns the public half.
func (k *KServerKey) Public() *KServerPub { return &KServerPub{k.priv.PublicKey()} }

// MarshalKServerKey encodes the private key file: version, u16 KEM id, private key bytes.
func (k *KServerKey) Marshal() ([]byte, error) {
	b, err := k.priv.Bytes()
	if err != nil {
		return nil, err
	}
	w := &writer{}
	w.u8(Version)
	w.u16(KEMID)
	w.raw(b)
	return w.b, nil
}

// ParseKServerKey decodes what Marshal wrote.
func ParseKServerKey(b []byte) (*KServerKey, error) {
	r := newReader("k-server private key", b)
	kemHeader(r)
	if r.err != nil {
		return nil, r.err
	}
	k, err := kem().NewPrivateKey(r.b)
	if err != nil {
		return nil, fmt.Errorf("%w: k-server private key: %v", ErrMalformed, err)
	}
	return &KServerKey{k}, nil
}

func kemHeader(r *reader) {
	if v := r.u8("version"); r.err == nil && v != Version {
		r.fail("version %d, want %d", v, Version)
	}
	if id := r.u16("kem"); r.err == nil && id != KEMID {
		r.fail("KEM 0x%04x, want 0x%04x (ML-KEM-768+X25519)", id, KEMID)
	}
}

// Marshal encodes the public key: version, u16 KEM id, public key bytes (1216).
func (p *KServerPub) Marshal() []byte {
	w := &writer{}
	w.u8(Version)
	w.u16(KEMID)
	w.raw(p.pub.Bytes())
	return w.b
}

// ParseKServerPub decodes what Marshal wrote.
func ParseKServerPub(b []byte) (*KServerPub, error) {
	r := newReader("k-server public key", b)
	kemHeader(r)
	if r.err == nil && len(r.b) != publicKeyLen() {
		r.fail("%d key bytes, want %d", len(r.b), publicKeyLen())
	}
	if r.err != nil {
		return nil, r.err
	}
	p, err := parsePub(r.b)
	if err != nil {
		return nil, fmt.Errorf("%w: k-server public key: %v", ErrMalformed, err)
	}
	return &KServerPub{p}, nil
}

// Fingerprint is the hex SHA-256 of the marshalled public key (first 16 bytes), for
// checking a pinned key out of band.
func (p *KServerPub) Fingerprint() string {
	s := sha256.Sum256(p.Marshal())
	return hex.EncodeToString(s[:16])
}
