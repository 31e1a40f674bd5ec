package wire

import (
	"crypto/hpke"
	"fmt"
)

// Pseudonym grants (K-server access control): an owner gives a client an Ed25519
// pseudonym by sealing its 32-byte seed to the client's HPKE public key (same suite and
// encoding as the K-server's key); the V-server stores and hands out the sealed grants.

const (
	infoGrant  = "veil peekaboo v1 grant"
	TypeGrant  = 0x18
	TypeGrants = 0x19
	MaxGrants  = 4096
	SeedSize   = 32
)

// SealGrant seals a pseudonym seed to a client's public key.
func SealGrant(pub *KServerPub, seed []byte) ([]byte, error) {
	if len(seed) != SeedSize {
		return nil, fmt.Errorf("pseudonym seed of %d bytes, want %d", len(seed), SeedSize)
	}
	return hpke.Seal(pub.pub, kdf(), aead(), []byte(infoGrant), seed)
}

// OpenGrant opens a grant with the client's private key.
func OpenGrant(k *KServerKey, sealed []byte) ([]byte, error) {
	seed, err := hpke.Open(k.priv, kdf(), aead(), []byte(infoGrant), sealed)
	if err != nil || len(seed) != SeedSize {
		return nil, ErrOpen
	}
	return seed, nil
}

// Grant is an owner's request to store a sealed grant for client To.
type Grant struct {
	To     string
	Sealed []byte
}

func (m *Grant) Marshal() []byte {
	w := newMsg(TypeGrant)
	w.b8([]byte(m.To))
	w.b16(m.Sealed)
	return w.b
}

func ParseGrant(b []byte) (*Grant, error) {
	r := newReader("grant", b)
	r.header(TypeGrant)
	m := &Grant{To: string(r.b8("to")), Sealed: r.b16("sealed")}
	if r.err == nil {
		if err := CheckName(m.To); err != nil {
			r.fail("%v", err)
		}
	}
	return m, r.end(false)
}

// Grants is the V-server's answer to a client asking for its grants.
type Grants struct{ Sealed [][]byte }

func (m *Grants) Marshal() []byte {
	w := newMsg(TypeGrants)
	w.b16s(m.Sealed)
	return w.b
}

func ParseGrants(b []byte) (*Grants, error) {
	r := newReader("grants", b)
	r.header(TypeGrants)
	m := &Grants{Sealed: r.b16s("grants", MaxGrants)}
	return m, r.end(false)
}
