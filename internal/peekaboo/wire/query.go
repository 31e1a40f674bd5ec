package wire

import (
	"crypto/ed25519"
	"crypto/hpke"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Match modes.
const (
	ModeExact     = 1
	ModeSubstring = 2
)

// Limits fixed by the format.
const (
	MaxQuery      = 256  // bytes of a query or key
	MaxLimit      = 1000 // results per search
	MaxPseudonyms = 8    // pseudonym proofs per query, pseudonyms per pair
)

// MaxAhead is how far ahead of the K-server's clock a query's time may be; the K-server
// refuses it as stale beyond (docs/design-peekaboo.md, "Threat model").
const MaxAhead = 30 * time.Second

// QueryVersion is the version byte of a query plaintext. Version 1 padded to a multiple
// of 1024 bytes, so a long query with many proofs sealed to a larger size than a short
// one; version 2 is always QuerySize bytes.
const QueryVersion = 2

// QuerySize is the length of every query plaintext: the largest content (MaxQuery bytes
// of text and MaxPseudonyms proofs) fits, and every query is zero-padded to it, so the
// size of a sealed query says nothing of its text or of how many pseudonyms it proves.
const QuerySize = 1 + 1 + 1 + 2 + 32 + 16 + 8 + 2 + MaxQuery + 1 + MaxPseudonyms*(32+64) // 1088

// SealedQuerySize is the size of every sealed query: enc, QuerySize, the AEAD tag.
func SealedQuerySize() int { return encLen() + QuerySize + 16 }

// ErrOpen is returned when a sealed message does not open: altered, or sealed to another key.
var ErrOpen = errors.New("sealed message does not open (altered or wrong key)")

// PseudonymProof shows that the querier holds a pseudonym: its Ed25519 public key and a
// signature over the request (see docs/design-peekaboo.md).
type PseudonymProof struct {
	Pub [32]byte
	Sig [64]byte
}

// Query is the plaintext a client seals to the K-server.
type Query struct {
	Mode       uint8
	Advanced   bool
	Limit      uint16
	OneTimeKey [32]byte
	Nonce      [16]byte
	Time       uint64 // unix milliseconds
	Text       string
	Proofs     []PseudonymProof
}

// Check validates the fields a parser cannot fix.
func (q *Query) Check() error {
	switch {
	case q.Mode != ModeExact && q.Mode != ModeSubstring:
		return fmt.Errorf("mode %d: want 1 (exact) or 2 (substring)", q.Mode)
	case q.Limit == 0 || q.Limit > MaxLimit:
		return fmt.Errorf("limit %d: want 1..%d", q.Limit, MaxLimit)
	case len(q.Text) == 0 || len(q.Text) > MaxQuery:
		return fmt.Errorf("query of %d bytes: want 1..%d", len(q.Text), MaxQuery)
	case !utf8.ValidString(q.Text):
		return errors.New("query is not UTF-8")
	case len(q.Proofs) > MaxPseudonyms:
		return fmt.Errorf("%d pseudonym proofs: at most %d", len(q.Proofs), MaxPseudonyms)
	}
	return nil
}

// MarshalQuery encodes the plaintext, zero-padded to exactly QuerySize bytes
// (docs/formats/peekaboo-wire.md, "Sealed query").
func MarshalQuery(q *Query) ([]byte, error) {
	if err := q.Check(); err != nil {
		return nil, err
	}
	w := &writer{b: make([]byte, 0, QuerySize)}
	w.u8(QueryVersion)
	w.u8(q.Mode)
	var flags uint8
	if q.Advanced {
		flags = 1
	}
	w.u8(flags)
	w.u16(q.Limit)
	w.raw(q.OneTimeKey[:])
	w.raw(q.Nonce[:])
	w.u64(q.Time)
	w.b16([]byte(q.Text))
	w.u8(uint8(len(q.Proofs)))
	for _, p := range q.Proofs {
		w.raw(p.Pub[:])
		w.raw(p.Sig[:])
	}
	w.fill(QuerySize)
	return w.b, nil
}

// ParseQuery decodes a query plaintext: exactly QuerySize bytes, zero-padded.
func ParseQuery(b []byte) (*Query, error) {
	r := newReader("query", b)
	if v := r.u8("version"); r.err == nil && v != QueryVersion {
		r.fail("version %d, want %d (sealed by an older or newer veil)", v, QueryVersion)
	}
	if r.err == nil && len(b) != QuerySize {
		r.fail("%d bytes, want exactly %d", len(b), QuerySize)
	}
	q := &Query{Mode: r.u8("mode")}
	flags := r.u8("flags")
	if r.err == nil && flags&^1 != 0 {
		r.fail("unknown flags 0x%02x", flags)
	}
	q.Advanced = flags&1 != 0
	q.Limit = r.u16("limit")
	copy(q.OneTimeKey[:], r.take(32, "one-time key"))
	copy(q.Nonce[:], r.take(16, "nonce"))
	q.Time = r.u64("time")
	q.Text = string(r.b16("query"))
	n := int(r.u8("proofs"))
	if r.err == nil && n > MaxPseudonyms {
		r.fail("%d pseudonym proofs, at most %d", n, MaxPseudonyms)
	}
	for i := 0; i < n && r.err == nil; i++ {
		var p PseudonymProof
		copy(p.Pub[:], r.take(32, "pseudonym"))
		copy(p.Sig[:], r.take(64, "signature"))
		q.Proofs = append(q.Proofs, p)
	}
	if err := r.end(true); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("%w: query: %v", ErrMalformed, err)
	}
	return q, nil
}

// SealQuery seals q to the K-server: single-shot HPKE, enc || ciphertext.
func SealQuery(pub *KServerPub, q *Query) ([]byte, error) {
	pt, err := MarshalQuery(q)
	if err != nil {
		return nil, err
	}
	return hpke.Seal(pub.pub, kdf(), aead(), []byte(infoQuery), pt)
}

// OpenQuery opens a sealed query (exactly SealedQuerySize bytes). ErrOpen means altered
// or not for this key.
func OpenQuery(k *KServerKey, sealed []byte) (*Query, error) {
	if len(sealed) != SealedQuerySize() {
		return nil, fmt.Errorf("%w: sealed query of %d bytes, want %d", ErrMalformed, len(sealed), SealedQuerySize())
	}
	pt, err := hpke.Open(k.priv, kdf(), aead(), []byte(infoQuery), sealed)
	if err != nil {
		return nil, ErrOpen
	}
	return ParseQuery(pt)
}

// PseudonymMessage is what a pseudonym proof signs: it binds the proof to this one query
// (nonce, a hash of the one-time key, mode, flags, limit, text), so a proof cannot be
// lifted into another query.
func PseudonymMessage(q *Query) []byte {
	kh := sha256.Sum256(q.OneTimeKey[:])
	w := &writer{}
	w.raw([]byte("veil peekaboo v1 pseudonym"))
	w.raw(q.Nonce[:])
	w.raw(kh[:])
	w.u8(q.Mode)
	var f uint8
	if q.Advanced {
		f = 1
	}
	w.u8(f)
	w.u16(q.Limit)
	w.b16([]byte(q.Text))
	return w.b
}

// Prove adds a proof that the querier holds the pseudonym priv (Ed25519).
func (q *Query) Prove(priv ed25519.PrivateKey) {
	var p PseudonymProof
	copy(p.Pub[:], priv.Public().(ed25519.PublicKey))
	copy(p.Sig[:], ed25519.Sign(priv, PseudonymMessage(q)))
	q.Proofs = append(q.Proofs, p)
}

// Verified returns the pseudonyms whose proofs verify.
func (q *Query) Verified() [][32]byte {
	var out [][32]byte
	msg := PseudonymMessage(q)
	for _, p := range q.Proofs {
		if ed25519.Verify(p.Pub[:], msg, p.Sig[:]) {
			out = append(out, p.Pub)
		}
	}
	return out
}
