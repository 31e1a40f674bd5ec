package paillier

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"

	"filippo.io/bigmod"
)

// Bits is the modulus size of keys made by GenerateKey.
const Bits = 2048

// Sizes of the fixed-width encodings: N and each prime are big-endian, zero-padded.
const (
	PublicKeyLen  = Bits / 8     // N
	PrivateKeyLen = Bits / 8     // p || q
	CiphertextLen = 2 * Bits / 8 // an element of Z*_{N^2}
	primeLen      = Bits / 16    // p, q
)

var one = big.NewInt(1)

// PublicKey is N, with N and N^2 as bigmod moduli (the arithmetic) and as math/big
// integers (the range and unit checks on public ciphertexts).
type PublicKey struct {
	N      *big.Int
	nSq    *big.Int
	nBytes []byte          // N, PublicKeyLen bytes: the exponent of r^N
	n, n2  *bigmod.Modulus // N, N^2
	nIn2   *bigmod.Nat     // N as an element mod N^2
	oneIn2 *bigmod.Nat     // 1 as an element mod N^2
}

// PrivateKey holds the factors of N and, per factor, the constant-time decryption
// constants (decrypt.go). phi and mu of the textbook formula are not kept: the tests
// recompute them as the oracle.
type PrivateKey struct {
	PublicKey
	pq  []byte      // p || q, PrivateKeyLen bytes
	crt [2]crtPart  // decryption mod p^2 and q^2 (Paillier 1999, Section 7)
	qN  *bigmod.Nat // q as an element mod N (the CRT recombination)
}

func newPublicKey(nb []byte) (*PublicKey, error) {
	n, err := bigmod.NewModulus(nb)
	if err != nil {
		return nil, fmt.Errorf("paillier: modulus: %w", err)
	}
	n2, err := bigmod.NewModulusProduct(nb, nb)
	if err != nil {
		return nil, fmt.Errorf("paillier: modulus squared: %w", err)
	}
	nIn2, err := bigmod.NewNat().SetBytes(nb, n2)
	if err != nil {
		return nil, err
	}
	N := new(big.Int).SetBytes(nb)
	return &PublicKey{N: N, nSq: new(big.Int).Mul(N, N), nBytes: nb, n: n, n2: n2, nIn2: nIn2,
		oneIn2: bigmod.NewNat().SetUint(1).ExpandFor(n2)}, nil
}

// GenerateKey draws two distinct Bits/2-bit primes with N of exactly Bits bits. The primes
// come from crypto/rand.Prime (math/big, not constant-time: key generation runs once per
// server, offline; see docs/design-metal.md §6); everything derived from them is bigmod.
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
		if p.Cmp(q) == 0 {
			continue // rand.Prime sets the top two bits, so N has Bits bits; only p = q is redrawn
		}
		return newPrivateKey(append(p.FillBytes(make([]byte, primeLen)), q.FillBytes(make([]byte, primeLen))...))
	}
}

// newPrivateKey derives the key from p || q with bigmod alone. A p or q that is not prime
// is caught, with overwhelming probability, by the Fermat inverses' check in newCRTPart;
// p = q by the same check.
func newPrivateKey(pq []byte) (*PrivateKey, error) {
	p, q := pq[:primeLen], pq[primeLen:]
	if p[primeLen-1]&1 == 0 || q[primeLen-1]&1 == 0 {
		return nil, errors.New("paillier: p and q must be odd")
	}
	n, err := bigmod.NewModulusProduct(p, q)
	if err != nil || n.BitLen() != Bits {
		return nil, errors.New("paillier: p and q must be distinct and give a modulus of exactly 2048 bits")
	}
	pk, err := newPublicKey(n.Nat().Bytes(n))
	if err != nil {
		return nil, err
	}
	sk := &PrivateKey{PublicKey: *pk, pq: append([]byte(nil), pq...)}
	if sk.crt[0], err = newCRTPart(p, q); err != nil {
		return nil, err
	}
	if sk.crt[1], err = newCRTPart(q, p); err != nil {
		return nil, err
	}
	if sk.qN, err = bigmod.NewNat().SetBytes(q, sk.n); err != nil {
		return nil, err
	}
	return sk, nil
}

// Bytes is N, PublicKeyLen bytes.
func (pk *PublicKey) Bytes() []byte { return append([]byte(nil), pk.nBytes...) }

// ParsePublicKey reads a Bytes'd key: an odd modulus of exactly Bits bits.
func ParsePublicKey(b []byte) (*PublicKey, error) {
	if len(b) != PublicKeyLen {
		return nil, fmt.Errorf("paillier: public key of %d bytes, want %d", len(b), PublicKeyLen)
	}
	n := new(big.Int).SetBytes(b)
	if n.BitLen() != Bits || n.Bit(0) == 0 {
		return nil, errors.New("paillier: public key is not an odd 2048-bit modulus")
	}
	return newPublicKey(append([]byte(nil), b...))
}

// Bytes is p || q, PrivateKeyLen bytes.
func (sk *PrivateKey) Bytes() []byte { return append([]byte(nil), sk.pq...) }

// ParsePrivateKey reads a Bytes'd private key (the factors are not re-tested for primality:
// it is the server's own stored key; see newPrivateKey for what is checked).
func ParsePrivateKey(b []byte) (*PrivateKey, error) {
	if len(b) != PrivateKeyLen {
		return nil, fmt.Errorf("paillier: private key of %d bytes, want %d", len(b), PrivateKeyLen)
	}
	return newPrivateKey(b)
}

// toNat is v (0 <= v < the modulus, at most size bytes) as a bigmod element.
func toNat(v *big.Int, size int, m *bigmod.Modulus) (*bigmod.Nat, error) {
	if v.Sign() < 0 || v.BitLen() > 8*size {
		return nil, errors.New("out of range")
	}
	return bigmod.NewNat().SetBytes(v.FillBytes(make([]byte, size)), m)
}

// encrypt returns (1 + mN) r^N mod N^2 for m reduced mod N and a fresh r drawn by
// crypto/rand.Int. A draw that is not a unit (0, or sharing a factor with N, which would
// factor N) gives a result that is not a unit: the callers check the value they publish
// (Encrypt this one, AddPlain its product with the input ciphertext, a unit iff this is)
// and draw again. The result itself is not checked here: in AddPlain it is secret (it is
// c'/c, the link between an anonym and its rerandomization), and the check is math/big.
func (pk *PublicKey) encrypt(rnd io.Reader, m *bigmod.Nat) (*bigmod.Nat, error) {
	gm := bigmod.NewNat().Mod(m, pk.n2) // m < N, so m mod N^2 is m
	gm.Mul(pk.nIn2, pk.n2).Add(pk.oneIn2, pk.n2)
	r, err := rand.Int(rnd, pk.N)
	if err != nil {
		return nil, err
	}
	rn, err := toNat(r, CiphertextLen, pk.n2)
	if err != nil {
		return nil, err
	}
	return bigmod.NewNat().Exp(rn, pk.nBytes, pk.n2).Mul(gm, pk.n2), nil
}

// natInt is x (an element mod m) as a big.Int: for values that leave the package.
func natInt(x *bigmod.Nat, m *bigmod.Modulus) *big.Int { return new(big.Int).SetBytes(x.Bytes(m)) }

// Encrypt returns (1 + mN) r^N mod N^2 for 0 <= m < N and a fresh r.
func (pk *PublicKey) Encrypt(rnd io.Reader, m *big.Int) (*big.Int, error) {
	mn, err := toNat(m, PublicKeyLen, pk.n)
	if err != nil {
		return nil, errors.New("paillier: plaintext out of range [0, N)")
	}
	for {
		c, err := pk.encrypt(rnd, mn)
		if err != nil {
			return nil, err
		}
		if ci := natInt(c, pk.n2); pk.checkCiphertext(ci) == nil { // public: the ciphertext
			return ci, nil
		}
	}
}

// AddPlain returns an encryption of Dec(c) + m mod N with fresh randomness: c (1 + mN) r^N.
// Its output is distributed as a fresh encryption of the sum, whatever c's randomness was.
// An m in [0, 2^Bits) is reduced mod N in constant time; any other m by math/big.
func (pk *PublicKey) AddPlain(rnd io.Reader, c, m *big.Int) (*big.Int, error) {
	if err := pk.checkCiphertext(c); err != nil {
		return nil, err
	}
	var mn *bigmod.Nat
	var err error
	if m.Sign() >= 0 && m.BitLen() <= Bits {
		mn, err = bigmod.NewNat().SetOverflowingBytes(m.FillBytes(make([]byte, PublicKeyLen)), pk.n)
	} else {
		mn, err = toNat(new(big.Int).Mod(m, pk.N), PublicKeyLen, pk.n)
	}
	if err != nil {
		return nil, err
	}
	cn, err := toNat(c, CiphertextLen, pk.n2)
	if err != nil {
		return nil, err
	}
	for {
		e, err := pk.encrypt(rnd, mn)
		if err != nil {
			return nil, err
		}
		// Only the product is checked (it is public; e, which is c'/c, is not).
		if out := natInt(e.Mul(cn, pk.n2), pk.n2); pk.checkCiphertext(out) == nil {
			return out, nil
		}
	}
}

// checkCiphertext is on public values: math/big is fine here.
func (pk *PublicKey) checkCiphertext(c *big.Int) error {
	if c.Sign() <= 0 || c.Cmp(pk.nSq) >= 0 || new(big.Int).GCD(nil, nil, c, pk.N).Cmp(one) != 0 {
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
