package paillier

import (
	"errors"
	"math/big"

	"filippo.io/bigmod"
)

// twoK is 2^(8 primeLen) = 2^1024 as a (even) bigmod modulus: L_r's exact division by the
// odd prime r is a multiplication by r^-1 mod 2^1024 (the quotient is below r < 2^1024).
var twoK = func() *bigmod.Modulus {
	m, err := bigmod.NewModulus(append([]byte{1}, make([]byte, primeLen)...))
	if err != nil {
		panic(err) // a constant
	}
	return m
}()

// crtPart is one prime r's decryption constants, s being the other prime:
// m mod r = L_r(c^(r-1) mod r^2) h mod r, L_r(x) = (x-1)/r,
// h = L_r(g^(r-1) mod r^2)^-1 mod r = (-s)^-1 mod r (with g = 1+N, L_r(g^(r-1)) = (r-1)s).
// Every value is a bigmod element and every operation on them constant-time.
type crtPart struct {
	r, r2 *bigmod.Modulus
	rm1   []byte      // r-1, the exponent, primeLen bytes
	inv   *bigmod.Nat // s^-1 mod r (r^-1 of the CRT recombination when r = p)
	h     *bigmod.Nat // -(s^-1) mod r
	rInvW *bigmod.Nat // r^-1 mod 2^1024
}

// newCRTPart derives the constants from r and s (primeLen bytes each, r odd) with bigmod:
// s^-1 mod r by Fermat (s^(r-2), constant-time Exp), checked (a composite r or r = s fails
// the check), and r^-1 mod 2^1024 by Newton's iteration, checked.
func newCRTPart(r, s []byte) (crtPart, error) {
	bad := errors.New("paillier: p and q do not give a valid key")
	var c crtPart
	var err error
	if c.r, err = bigmod.NewModulus(r); err != nil {
		return c, bad
	}
	if c.r2, err = bigmod.NewModulusProduct(r, r); err != nil {
		return c, bad
	}
	c.rm1 = append([]byte(nil), r...)
	c.rm1[primeLen-1] &^= 1 // r odd: r-1 clears bit 0
	rIn2, err := bigmod.NewNat().SetBytes(r, c.r2)
	if err != nil {
		return c, bad
	}
	rm2 := rIn2.SubOne(c.r2).SubOne(c.r2).Bytes(c.r2) // r-2 < 2^1024: the low primeLen bytes
	rm2 = rm2[len(rm2)-primeLen:]
	sIn2, err := bigmod.NewNat().SetBytes(s, c.r2)
	if err != nil {
		return c, bad
	}
	sr := bigmod.NewNat().Mod(sIn2, c.r)
	c.inv = bigmod.NewNat().Exp(sr, rm2, c.r)
	if bigmod.NewNat().Mod(sIn2, c.r).Mul(c.inv, c.r).IsOne() != 1 {
		return c, bad
	}
	c.h = bigmod.NewNat().ExpandFor(c.r).Sub(c.inv, c.r)
	if c.rInvW, err = inverseMod2K(r); err != nil {
		return c, bad
	}
	return c, nil
}

// inverseMod2K is r^-1 mod 2^1024 for odd r by Newton's iteration y <- y(2 - ry), which
// doubles the correct low bits each step from y = r (correct mod 8): nine steps, each two
// bigmod multiplications; the result is checked.
func inverseMod2K(r []byte) (*bigmod.Nat, error) {
	rw, err := bigmod.NewNat().SetBytes(r, twoK)
	if err != nil {
		return nil, err
	}
	y, _ := bigmod.NewNat().SetBytes(r, twoK)
	for bits := 3; bits < 8*primeLen; bits *= 2 {
		t := bigmod.NewNat().Mod(rw, twoK).Mul(y, twoK)
		two := bigmod.NewNat().SetUint(2).ExpandFor(twoK)
		y.Mul(two.Sub(t, twoK), twoK)
	}
	if bigmod.NewNat().Mod(rw, twoK).Mul(y, twoK).IsOne() != 1 {
		return nil, errors.New("paillier: no inverse mod 2^1024")
	}
	return y, nil
}

// decrypt is m mod r from c (an element mod N^2): x = c^(r-1) mod r^2 = 1 + k r,
// k = (x-1) r^-1 mod 2^1024 exactly, m mod r = k h mod r.
func (c crtPart) decrypt(ct *bigmod.Nat) *bigmod.Nat {
	x := bigmod.NewNat().Mod(ct, c.r2)
	x = bigmod.NewNat().Exp(x, c.rm1, c.r2).SubOne(c.r2)
	k := bigmod.NewNat().Mod(x, twoK).Mul(c.rInvW, twoK)
	return bigmod.NewNat().Mod(k, c.r).Mul(c.h, c.r)
}

// Decrypt returns m = L(c^phi mod N^2) mu mod N, L(x) = (x-1)/N, computed by the Chinese
// remainder theorem over p^2 and q^2 (the same m; about four times faster), in constant
// time with respect to the key and c (bigmod). Only the public checks on c (range, unit)
// are math/big; the result is converted to a big.Int for the caller.
func (sk *PrivateKey) Decrypt(c *big.Int) (*big.Int, error) {
	if err := sk.checkCiphertext(c); err != nil {
		return nil, err
	}
	cn, err := toNat(c, CiphertextLen, sk.n2)
	if err != nil {
		return nil, err
	}
	p := sk.crt[0].r
	mp, mq := sk.crt[0].decrypt(cn), sk.crt[1].decrypt(cn)
	// m = mq + q ((mp - mq) q^-1 mod p) < N
	d := mp.Sub(bigmod.NewNat().Mod(mq, p), p).Mul(sk.crt[0].inv, p)
	m := bigmod.NewNat().Mod(d, sk.n).Mul(sk.qN, sk.n)
	m.Add(bigmod.NewNat().Mod(mq, sk.n), sk.n)
	return natInt(m, sk.n), nil
}
