package paillier

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math/big"
	mrand "math/rand/v2"
	"os"
	"testing"
)

// randUnit is a uniform unit mod N^2: every unit is a ciphertext (Z*_{N^2} = (1+N)^Z_N x N-th residues).
func randUnit(t testing.TB, sk *PrivateKey, o textbook) *big.Int {
	for {
		c := randBelow(t, o.n2)
		if sk.checkCiphertext(c) == nil {
			return c
		}
	}
}

// TestDecryptMatchesTextbook: the constant-time CRT decryption equals the textbook formula
// (math/big) on arbitrary units mod N^2, not only on this package's own encryptions.
func TestDecryptMatchesTextbook(t *testing.T) {
	sk := key(t)
	o := oracle(sk)
	n2m1 := new(big.Int).Sub(o.n2, one)
	cs := []*big.Int{one, big.NewInt(2), new(big.Int).Sub(sk.N, one), new(big.Int).Add(sk.N, one), n2m1,
		new(big.Int).Sub(n2m1, sk.N), o.p, new(big.Int).Mul(o.q, o.q)} // the last two are refused
	for range 8 {
		cs = append(cs, randUnit(t, sk, o))
	}
	for i, c := range cs {
		if i == 6 || i == 7 {
			if _, err := sk.Decrypt(c); err == nil {
				t.Errorf("non-unit ciphertext %d decrypted", i)
			}
			continue
		}
		got, err := sk.Decrypt(c)
		if err != nil || got.Cmp(o.decrypt(sk.N, c)) != 0 {
			t.Fatalf("Decrypt = %v, %v; textbook %v", got, err, o.decrypt(sk.N, c))
		}
	}
}

// TestCRTConstants: the bigmod-derived constants equal their math/big definitions:
// h_r = L_r(g^(r-1) mod r^2)^-1 mod r, inv = s^-1 mod r, r * rInvW = 1 mod 2^1024, rm1 = r-1.
func TestCRTConstants(t *testing.T) {
	sk := key(t)
	o := oracle(sk)
	g := new(big.Int).Add(sk.N, one)
	w := new(big.Int).Lsh(one, 8*primeLen)
	for i, rs := range [][2]*big.Int{{o.p, o.q}, {o.q, o.p}} {
		r, s, c := rs[0], rs[1], sk.crt[i]
		r2 := new(big.Int).Mul(r, r)
		l := new(big.Int).Exp(g, new(big.Int).Sub(r, one), r2)
		l.Div(l.Sub(l, one), r)
		if h := new(big.Int).ModInverse(l, r); h.Cmp(natInt(c.h, c.r)) != 0 {
			t.Errorf("prime %d: h differs from L_r(g^(r-1))^-1", i)
		}
		if inv := new(big.Int).ModInverse(s, r); inv.Cmp(natInt(c.inv, c.r)) != 0 {
			t.Errorf("prime %d: inv differs from s^-1 mod r", i)
		}
		if x := new(big.Int).Mul(r, natInt(c.rInvW, twoK)); x.Mod(x, w).Cmp(one) != 0 {
			t.Errorf("prime %d: r^-1 mod 2^1024 wrong", i)
		}
		if new(big.Int).SetBytes(c.rm1).Cmp(new(big.Int).Sub(r, one)) != 0 {
			t.Errorf("prime %d: rm1 is not r-1", i)
		}
	}
}

// TestInverseMod2K: r^-1 mod 2^1024 for odd r of every residue mod 8 (Newton's start is
// correct to 3 bits for r = 3, 5 mod 8, more for 1, 7), against math/big.
func TestInverseMod2K(t *testing.T) {
	w := new(big.Int).Lsh(one, 8*primeLen)
	for i := range 16 {
		r := randBelow(t, w)
		r.SetBit(r, 0, 1).SetBit(r, 1, uint(i&1)).SetBit(r, 2, uint(i>>1&1))
		y, err := inverseMod2K(r.FillBytes(make([]byte, primeLen)))
		if err != nil || natInt(y, twoK).Cmp(new(big.Int).ModInverse(r, w)) != 0 {
			t.Fatalf("r = %v mod 8: inverse wrong (%v)", new(big.Int).Mod(r, big.NewInt(8)), err)
		}
	}
}

// TestEncryptIsTheFormula: with a deterministic reader, Encrypt and AddPlain give exactly
// (1+mN) r^N mod N^2 (times c) with r = crypto/rand.Int(reader, N): the same bytes as the
// math/big implementation they replace (the share vectors depend on it).
func TestEncryptIsTheFormula(t *testing.T) {
	sk := key(t)
	o := oracle(sk)
	m := randBelow(t, sk.N)
	seed := [32]byte{'p', 'a', 'i'}
	c, err := sk.Encrypt(mrand.NewChaCha8(seed), m)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := rand.Int(mrand.NewChaCha8(seed), sk.N)
	want := new(big.Int).Exp(r, sk.N, o.n2)
	want.Mod(want.Mul(want, new(big.Int).Add(new(big.Int).Mul(m, sk.N), one)), o.n2)
	if c.Cmp(want) != 0 {
		t.Fatal("Encrypt is not (1+mN) r^N mod N^2")
	}
	c2, err := sk.AddPlain(mrand.NewChaCha8(seed), c, m)
	if err != nil {
		t.Fatal(err)
	}
	if want.Mod(want.Mul(want, want), o.n2); c2.Cmp(want) != 0 {
		t.Fatal("AddPlain is not c (1+mN) r^N mod N^2")
	}
}

// TestAddPlainReduces: plaintexts to add outside [0, N) are reduced mod N, on both paths
// (constant-time below 2^2048, math/big otherwise).
func TestAddPlainReduces(t *testing.T) {
	sk := key(t)
	a := randBelow(t, sk.N)
	c, _ := sk.Encrypt(rand.Reader, a)
	big2048 := new(big.Int).Lsh(one, Bits)
	for _, m := range []*big.Int{sk.N, new(big.Int).Sub(big2048, one), big.NewInt(-5), new(big.Int).Add(big2048, big.NewInt(9))} {
		c2, err := sk.AddPlain(rand.Reader, c, m)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := sk.Decrypt(c2)
		want := new(big.Int).Add(a, m)
		if want.Mod(want, sk.N); got.Cmp(want) != 0 {
			t.Fatalf("AddPlain(c, %v) decrypts wrong", m)
		}
	}
}

// TestParsePrivateKeyRefuses: an even factor, p = q, a composite factor, a short modulus.
func TestParsePrivateKeyRefuses(t *testing.T) {
	good := key(t).Bytes()
	p, q := good[:primeLen], good[primeLen:]
	even := append(append([]byte(nil), p...), q...)
	even[primeLen-1] &^= 1
	composite := append(bytes.Repeat([]byte{0xff}, primeLen), q...) // 2^1024-1 = 3 * ...
	short := append(make([]byte, primeLen), q...)
	short[primeLen-1] = 3
	for name, b := range map[string][]byte{"even": even, "p = q": append(append([]byte(nil), q...), q...),
		"composite": composite, "short": short} {
		if _, err := ParsePrivateKey(b); err == nil {
			t.Errorf("%s key accepted", name)
		}
	}
}

// vectorKey is the share vectors' first Paillier key (fixed primes: a fuzz worker would
// otherwise spend its time in an instrumented GenerateKey).
func vectorKey(t testing.TB) *PrivateKey {
	b, err := os.ReadFile("../../../testdata/metal/share-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ PaillierSK1 string }
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	raw, _ := hex.DecodeString(v.PaillierSK1)
	sk, err := ParsePrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sk
}

// FuzzDecrypt: any bytes either fail to parse as a ciphertext or decrypt, without panic, to
// a value below N. The comparison with the textbook formula is TestDecryptMatchesTextbook's
// (and this target's seeds'): under -fuzz's instrumentation math/big's 4096-bit Exp takes
// seconds, and the constant-time decryption has no value-dependent branch for coverage to
// find, so the fuzzer's work is the parser and the sizes.
func FuzzDecrypt(f *testing.F) {
	sk := vectorKey(f)
	o := oracle(sk)
	c, _ := sk.Encrypt(rand.Reader, big.NewInt(42))
	seeds := [][]byte{CiphertextBytes(c), make([]byte, CiphertextLen), CiphertextBytes(sk.N),
		bytes.Repeat([]byte{0xff}, CiphertextLen), CiphertextBytes(new(big.Int).Sub(o.n2, one)), {1}}
	for _, b := range seeds {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := sk.ParseCiphertext(b)
		if err != nil {
			return
		}
		m, err := sk.Decrypt(c)
		if err != nil || m.Sign() < 0 || m.Cmp(sk.N) >= 0 {
			t.Fatalf("Decrypt = %v, %v", m, err)
		}
		if isSeed(seeds, b) && m.Cmp(o.decrypt(sk.N, c)) != 0 {
			t.Fatalf("Decrypt = %v; textbook %v", m, o.decrypt(sk.N, c))
		}
	})
}

func isSeed(seeds [][]byte, b []byte) bool {
	for _, s := range seeds {
		if bytes.Equal(s, b) {
			return true
		}
	}
	return false
}
