package oprf

import (
	"github.com/oasisprotocol/curve25519-voi/curve"
	voiscalar "github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// The RFC 9496 ristretto255 group as this package uses it, over curve25519-voi (a Go
// port of curve25519-dalek: amd64 assembly field arithmetic, AVX2 point arithmetic when
// the CPU has it, precomputed tables for the generator). Only encoding and decoding are
// wrapped here; the arithmetic is voi's own (constant-time unless its name says Vartime).

type (
	element = curve.RistrettoPoint
	scal    = voiscalar.Scalar
)

// newElement returns the identity.
func newElement() *element { return curve.NewRistrettoPoint() }

// encode is RFC 9496's Encode.
func encode(e *element) []byte {
	var c curve.CompressedRistretto
	c.SetRistrettoPoint(e)
	return c[:]
}

// decodeElement is RFC 9496's Decode: only canonical encodings of group elements.
func decodeElement(b []byte) (*element, bool) {
	var c curve.CompressedRistretto
	if _, err := c.SetBytes(b); err != nil {
		return nil, false
	}
	e, err := newElement().SetCompressed(&c)
	return e, err == nil
}

// elementFromUniform is RFC 9496's element derivation (one-way map) of 64 bytes.
func elementFromUniform(b []byte) *element {
	e, err := newElement().SetUniformBytes(b)
	if err != nil {
		panic("oprf: element derivation of a non-64-byte string") // callers pass 64
	}
	return e
}

// scalarFromUniform reduces 64 little-endian bytes modulo the group order.
func scalarFromUniform(b []byte) *scal {
	s, err := voiscalar.NewFromBytesModOrderWide(b)
	if err != nil {
		panic("oprf: wide scalar reduction of a non-64-byte string") // callers pass 64
	}
	return s
}

// decodeScalar accepts only canonical 32-byte scalar encodings.
func decodeScalar(b []byte) (*scal, bool) {
	s, err := voiscalar.NewFromCanonicalBytes(b)
	return s, err == nil
}

// appendScalar appends s's 32-byte little-endian encoding.
func appendScalar(dst []byte, s *scal) []byte {
	var b [voiscalar.ScalarSize]byte
	_ = s.ToBytes(b[:]) // cannot fail: b is ScalarSize bytes
	return append(dst, b[:]...)
}

func isZero(s *scal) bool { return s.Equal(voiscalar.New()) == 1 }

func isIdentity(e *element) bool { return e.IsIdentity() }

// baseMult is s times the generator, from voi's precomputed table (constant-time).
func baseMult(s *scal) *element { return newElement().MulBasepoint(curve.RISTRETTO_BASEPOINT_TABLE, s) }

// newScalar returns zero.
func newScalar() *scal { return voiscalar.New() }
