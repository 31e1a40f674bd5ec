package paillier

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
)

// Bits is the modulus size of keys made by GenerateKey.
const Bits = 2048

// Sizes of the fixed-width encodings: N and each prime are big-endian, zero-padded.
const (
	PublicKeyLen  = Bits / 8     // N
	PrivateKeyLen = Bits / 8     // p || q
	CiphertextLen = 2 * Bits / 8 // an element of Z*_{N^2}
)

var one = big.NewInt(1)

// PublicKey is N (and N^2, derived).
type PublicKey struct {
	N, n2 *big.Int
}

// PrivateKey holds the factors of N and the decryption constants phi = (p-1)(q-1) and
// mu = phi^-1 mod N.
type PrivateKey struct {
	PublicKey
	p, q, phi, mu *big.Int
	crt           [2]crtPart // decryption mod p^2 and q^2 (Paillier 1999, Section 7)
	qInvP         *big.Int   // q^-1 mod p
}

// crtPart is one prime's decryption constants: m mod r = L_r(c^(r-1) mod r^2) h mod r,
// L_r(x) = (x-1)/r, h = L_r(g^(r-1) mod r^2)^-1 mod r.
type crtPart struct {
	r, r2, rm1, h *big.Int
}

func newCRTPart(r, g *big.Int) (crtPart, bool) {
	c := crtPart{r: r, r2: new(big.Int).Mul(r, r), rm1: new(big.Int).Sub(r, one)}
	c.h = new(big.Int).ModInverse(c.lr(new(big.Int).Exp(g, c.rm1, c.r2)), r)
	return c, c.h != nil
}

// lr is L_r(x), x overwritten.
func (c crtPart) lr(x *big.Int) *big.Int { return x.Div(x.Sub(x, one), c.r) }

func (c crtPart) decrypt(ct *big.Int) *big.Int {
	x := c.lr(new(big.Int).Exp(ct, c.rm1, c.r2))
	return x.Mod(x.Mul(x, c.h), c.r)
}

// GenerateKey draws two distinct Bits/2-bit primes with N of exactly Bits bits.
func GenerateKey(rnd io.Reader) (*PrivateKey, error) {
	for {
		p, err := rand.Prime(rnd, Bits/2)
		if err != nil {
			return nil, err
		}
		q, err := rand.Prime(rnd, Bits/2)
		if err != nil {
			return nil, err
		}
		sk, err := newPrivateKey(p, q)
		if err == nil {
			return sk, nil
		}
	}
}

func newPrivateKey(p, q *big.Int) (*PrivateKey, error) {
	n := new(big.Int).Mul(p, q)
	if p.Cmp(q) == 0 || n.BitLen() != Bits {
		return nil, errors.New("paillier: p and q must be distinct and give a modulus of exactly 2048 bits")
	}
	phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
	mu := new(big.Int).ModInverse(phi, n)
	if mu == nil {
		return nil, errors.New("paillier: phi(N) is not invertible mod N")
	}
	sk := &PrivateKey{PublicKey: PublicKey{N: n, n2: new(big.Int).Mul(n, n)}, p: p, q: q, phi: phi, mu: mu}
	g := new(big.Int).Add(n, one)
	var okP, okQ bool
	sk.crt[0], okP = newCRTPart(p, g)
	sk.crt[1], okQ = newCRTPart(q, g)
	sk.qInvP = new(big.Int).ModInverse(q, p)
	if !okP || !okQ || sk.qInvP == nil {
		return nil, errors.New("paillier: p and q do not give a valid key")
	}
	return sk, nil
}

// Bytes is N, PublicKeyLen bytes.
func (pk *PublicKey) Bytes() []byte { return pk.N.FillBytes(make([]byte, PublicKeyLen)) }

// ParsePublicKey reads a Bytes'd key: an odd modulus of exactly Bits bits.
func ParsePublicKey(b []byte) (*PublicKey, error) {
	if len(b) != PublicKeyLen {
		return nil, fmt.Errorf("paillier: public key of %d bytes, want %d", len(b), PublicKeyLen)
	}
	n := new(big.Int).SetBytes(b)
	if n.BitLen() != Bits || n.Bit(0) == 0 {
		return nil, errors.New("paillier: public key is not an odd 2048-bit modulus")
	}
	return &PublicKey{N: n, n2: new(big.Int).Mul(n, n)}, nil
}

// Bytes is p || q, PrivateKeyLen bytes.
func (sk *PrivateKey) Bytes() []byte {
	out := sk.p.FillBytes(make([]byte, PrivateKeyLen/2))
	return append(out, sk.q.FillBytes(make([]byte, PrivateKeyLen/2))...)
}

// ParsePrivateKey reads a Bytes'd private key (the factors are not re-tested for primality:
// it is the server's own stored key).
func ParsePrivateKey(b []byte) (*PrivateKey, error) {
	if len(b) != PrivateKeyLen {
		return nil, fmt.Errorf("paillier: private key of %d bytes, want %d", len(b), PrivateKeyLen)
	}
	h := PrivateKeyLen / 2
	return newPrivateKey(new(big.Int).SetBytes(b[:h]), new(big.Int).SetBytes(b[h:]))
}

// unit draws a uniform element of Z*_N.
func (pk *PublicKey) unit(rnd io.Reader) (*big.Int, error) {
	g := new(big.Int)
	for {
		r, err := rand.Int(rnd, pk.N)
		if err != nil {
			return nil, err
		}
		if r.Sign() > 0 && g.GCD(nil, nil, r, pk.N).Cmp(one) == 0 {
			return r, nil
		}
	}
}

// noise is r^N mod N^2 for a fresh uniform unit r: an encryption of zero.
func (pk *PublicKey) noise(rnd io.Reader) (*big.Int, error) {
	r, err := pk.unit(rnd)
	if err != nil {
		return nil, err
	}
	return r.Exp(r, pk.N, pk.n2), nil
}

// Encrypt returns (1 + mN) r^N mod N^2 for 0 <= m < N and a fresh r.
func (pk *PublicKey) Encrypt(rnd io.Reader, m *big.Int) (*big.Int, error) {
	if m.Sign() < 0 || m.Cmp(pk.N) >= 0 {
		return nil, errors.New("paillier: plaintext out of range [0, N)")
	}
	z, err := pk.noise(rnd)
	if err != nil {
		return nil, err
	}
	gm := new(big.Int).Mul(m, pk.N)
	gm.Add(gm, one)
	return z.Mod(z.Mul(z, gm), pk.n2), nil
}

// AddPlain returns an encryption of Dec(c) + m mod N with fresh randomness: c (1 + mN) r^N.
// Its output is distributed as a fresh encryption of the sum, whatever c's randomness was.
func (pk *PublicKey) AddPlain(rnd io.Reader, c, m *big.Int) (*big.Int, error) {
	if err := pk.checkCiphertext(c); err != nil {
		return nil, err
	}
	e, err := pk.Encrypt(rnd, new(big.Int).Mod(m, pk.N))
	if err != nil {
		return nil, err
	}
	return e.Mod(e.Mul(e, c), pk.n2), nil
}

func (pk *PublicKey) checkCiphertext(c *big.Int) error {
	if c.Sign() <= 0 || c.Cmp(pk.n2) >= 0 || new(big.Int).GCD(nil, nil, c, pk.N).Cmp(one) != 0 {
		return errors.New("paillier: ciphertext is not a unit mod N^2")
	}
	return nil
}

// CiphertextBytes encodes c in CiphertextLen bytes.
func CiphertextBytes(c *big.Int) []byte { return c.FillBytes(make([]byte, CiphertextLen)) }

// ParseCiphertext reads CiphertextLen bytes as a ciphertext under pk (a unit mod N^2).
func (pk *PublicKey) ParseCiphertext(b []byte) (*big.Int, error) {
	if len(b) != CiphertextLen {
		return nil, fmt.Errorf("paillier: ciphertext of %d bytes, want %d", len(b), CiphertextLen)
	}
	c := new(big.Int).SetBytes(b)
	return c, pk.checkCiphertext(c)
}

// Decrypt returns m = L(c^phi mod N^2) mu mod N, L(x) = (x-1)/N, computed by the Chinese
// remainder theorem over p^2 and q^2 (the same m; about four times faster).
func (sk *PrivateKey) Decrypt(c *big.Int) (*big.Int, error) {
	if err := sk.checkCiphertext(c); err != nil {
		return nil, err
	}
	mp, mq := sk.crt[0].decrypt(c), sk.crt[1].decrypt(c)
	// m = mq + q ((mp - mq) q^-1 mod p)
	d := mp.Sub(mp, mq)
	d.Mod(d.Mul(d, sk.qInvP), sk.p)
	return d.Add(d.Mul(d, sk.q), mq), nil
}

// decryptPlain is the textbook formula, kept for the test that checks the CRT path.
func (sk *PrivateKey) decryptPlain(c *big.Int) *big.Int {
	x := new(big.Int).Exp(c, sk.phi, sk.n2)
	x.Sub(x, one)
	x.Div(x, sk.N)
	x.Mul(x, sk.mu)
	return x.Mod(x, sk.N)
}
