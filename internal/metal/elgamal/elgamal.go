package elgamal

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	ristretto "github.com/bwesterb/go-ristretto"
)

const (
	ChunkLen      = 16 // plaintext bytes per ciphertext (one Lizard-encoded point)
	CiphertextLen = 64 // R || C, 32 bytes each
	PointLen      = 32
)

// ErrDecode is returned when a decryption is not a Lizard encoding: a wrong key, a wrong
// partial decryption, or an altered ciphertext.
var ErrDecode = errors.New("elgamal: decryption is not a valid chunk (altered ciphertext or wrong key)")

func randomScalar(rnd io.Reader) (*ristretto.Scalar, error) {
	var buf [64]byte
	if _, err := io.ReadFull(rnd, buf[:]); err != nil {
		return nil, err
	}
	var s ristretto.Scalar
	return s.SetReduced(&buf), nil
}

// KeyShare is one server's share of the DataORAM key.
type KeyShare struct {
	x ristretto.Scalar
	X ristretto.Point
}

// NewKeyShare draws a key share.
func NewKeyShare(rnd io.Reader) (*KeyShare, error) {
	x, err := randomScalar(rnd)
	if err != nil {
		return nil, err
	}
	k := &KeyShare{x: *x}
	k.X.ScalarMultBase(x)
	return k, nil
}

// KeyShareLen is the length of a marshalled key share (the secret scalar).
const KeyShareLen = 32

// Marshal returns the secret scalar x (32 bytes, little-endian as ristretto encodes it).
func (k *KeyShare) Marshal() []byte { return k.x.Bytes() }

// UnmarshalKeyShare is the inverse of Marshal; it recomputes X.
func UnmarshalKeyShare(p []byte) (*KeyShare, error) {
	if len(p) != KeyShareLen {
		return nil, fmt.Errorf("elgamal: key share of %d bytes, want %d", len(p), KeyShareLen)
	}
	var b [32]byte
	copy(b[:], p)
	k := &KeyShare{}
	k.x.SetBytes(&b)
	if !bytes.Equal(k.x.Bytes(), p) {
		return nil, errors.New("elgamal: key share is not a canonical scalar")
	}
	k.X.ScalarMultBase(&k.x)
	return k, nil
}

// PublicKey is P = X_1 + X_2, with a precomputed table for multiples of P.
type PublicKey struct {
	P     ristretto.Point
	table *ristretto.ScalarMultTable
}

// JoinPublic combines the two servers' public shares.
func JoinPublic(x1, x2 *ristretto.Point) PublicKey {
	pk := PublicKey{table: new(ristretto.ScalarMultTable)}
	pk.P.Add(x1, x2)
	pk.table.Compute(&pk.P)
	return pk
}

// Ciphertext is one encrypted chunk.
type Ciphertext struct{ R, C ristretto.Point }

// Encrypt encrypts one 16-byte chunk.
func (pk PublicKey) Encrypt(chunk *[ChunkLen]byte, rnd io.Reader) (Ciphertext, error) {
	r, err := randomScalar(rnd)
	if err != nil {
		return Ciphertext{}, err
	}
	var m, rp Ciphertext
	m.C.SetLizard(chunk)
	rp.R.ScalarMultBase(r)
	rp.C.ScalarMultTable(pk.table, r)
	rp.C.Add(&rp.C, &m.C)
	return rp, nil
}

// Rerandomizer adds the encryption of zero (s*G, s*P) to ciphertexts.
type Rerandomizer struct{ sg, sp ristretto.Point }

// NewRerandomizer precomputes s*G and s*P. One Rerandomizer may serve many ciphertexts only
// where a single party sees at most one of the results (paper Section 5.4, footnote 1:
// the blocks Server 1 offers in SS-DOT); where a party sees them all (the distributed
// permutation), use a fresh one per ciphertext.
func (pk PublicKey) NewRerandomizer(s *ristretto.Scalar) Rerandomizer {
	var r Rerandomizer
	r.sg.ScalarMultBase(s)
	r.sp.ScalarMultTable(pk.table, s)
	return r
}

// Apply returns (R + s*G, C + s*P): two point additions.
func (r Rerandomizer) Apply(ct Ciphertext) Ciphertext {
	var out Ciphertext
	out.R.Add(&ct.R, &r.sg)
	out.C.Add(&ct.C, &r.sp)
	return out
}

// Rerandomize rerandomizes one ciphertext with scalar s.
func (pk PublicKey) Rerandomize(ct Ciphertext, s *ristretto.Scalar) Ciphertext {
	return pk.NewRerandomizer(s).Apply(ct)
}

// RandomScalar draws a rerandomization scalar.
func RandomScalar(rnd io.Reader) (*ristretto.Scalar, error) { return randomScalar(rnd) }

// Partial is this server's share of the decryption of ct: x_i*R.
func (k *KeyShare) Partial(ct Ciphertext) ristretto.Point {
	var d ristretto.Point
	d.ScalarMult(&ct.R, &k.x)
	return d
}

// Combine finishes a decryption from both partials.
func Combine(ct Ciphertext, d1, d2 *ristretto.Point) ([ChunkLen]byte, error) {
	var m ristretto.Point
	m.Sub(&ct.C, d1)
	m.Sub(&m, d2)
	var out [ChunkLen]byte
	if err := m.LizardInto(&out); err != nil {
		return out, ErrDecode
	}
	return out, nil
}

// Marshal encodes ct as R || C.
func (ct Ciphertext) Marshal() []byte { return ct.AppendTo(make([]byte, 0, CiphertextLen)) }

// AppendTo appends R || C to out (no allocation when out has room).
func (ct *Ciphertext) AppendTo(out []byte) []byte {
	var b [PointLen]byte
	ct.R.BytesInto(&b)
	out = append(out, b[:]...)
	ct.C.BytesInto(&b)
	return append(out, b[:]...)
}

// UnmarshalCiphertext parses R || C, refusing non-canonical or invalid encodings.
func UnmarshalCiphertext(p []byte) (Ciphertext, error) {
	var ct Ciphertext
	if len(p) != CiphertextLen {
		return ct, fmt.Errorf("elgamal: ciphertext of %d bytes, want %d", len(p), CiphertextLen)
	}
	var r, c [PointLen]byte
	copy(r[:], p[:PointLen])
	copy(c[:], p[PointLen:])
	if !ct.R.SetBytes(&r) || !ct.C.SetBytes(&c) {
		return ct, fmt.Errorf("elgamal: ciphertext is not two ristretto255 elements")
	}
	return ct, nil
}

// EncryptBlock splits data (a multiple of ChunkLen bytes) into chunks and encrypts each,
// each with a fresh scalar. The Lizard encoding of a chunk equal to the one before it is
// reused (it is deterministic): a block of zeros encodes one point, not one per chunk.
func (pk PublicKey) EncryptBlock(data []byte, rnd io.Reader) ([]Ciphertext, error) {
	if len(data)%ChunkLen != 0 {
		return nil, fmt.Errorf("elgamal: block of %d bytes is not a multiple of %d", len(data), ChunkLen)
	}
	out := make([]Ciphertext, len(data)/ChunkLen)
	var m Ciphertext // (identity, M): the chunk encrypted under the scalar 0
	m.R.SetZero()
	for i := range out {
		var chunk [ChunkLen]byte
		copy(chunk[:], data[i*ChunkLen:])
		if i == 0 || !bytes.Equal(data[i*ChunkLen:(i+1)*ChunkLen], data[(i-1)*ChunkLen:i*ChunkLen]) {
			m.C.SetLizard(&chunk)
		}
		r, err := randomScalar(rnd)
		if err != nil {
			return nil, err
		}
		out[i] = pk.NewRerandomizer(r).Apply(m)
	}
	return out, nil
}

// Rerandomizers fills out with rerandomizers of fresh, independent scalars (one per
// ciphertext they will serve).
func (pk PublicKey) Rerandomizers(out []Rerandomizer, rnd io.Reader) error {
	for i := range out {
		s, err := randomScalar(rnd)
		if err != nil {
			return err
		}
		out[i] = pk.NewRerandomizer(s)
	}
	return nil
}
