package paillier

import (
	"bytes"
	"crypto/rand"
	"math/big"
	"sync"
	"testing"
)

var (
	keyOnce sync.Once
	testKey *PrivateKey
)

func key(t testing.TB) *PrivateKey {
	keyOnce.Do(func() {
		var err error
		if testKey, err = GenerateKey(rand.Reader); err != nil {
			t.Fatal(err)
		}
	})
	return testKey
}

// textbook is the oracle: the key's p, q, phi = (p-1)(q-1), mu = phi^-1 mod N and N^2 on
// math/big, recomputed from the stored p || q.
type textbook struct{ p, q, phi, mu, n2 *big.Int }

func oracle(sk *PrivateKey) textbook {
	b := sk.Bytes()
	p, q := new(big.Int).SetBytes(b[:primeLen]), new(big.Int).SetBytes(b[primeLen:])
	phi := new(big.Int).Mul(new(big.Int).Sub(p, one), new(big.Int).Sub(q, one))
	return textbook{p, q, phi, new(big.Int).ModInverse(phi, sk.N), new(big.Int).Mul(sk.N, sk.N)}
}

// decrypt is the textbook formula m = L(c^phi mod N^2) mu mod N, L(x) = (x-1)/N.
func (o textbook) decrypt(n, c *big.Int) *big.Int {
	x := new(big.Int).Exp(c, o.phi, o.n2)
	x.Sub(x, one)
	x.Div(x, n)
	x.Mul(x, o.mu)
	return x.Mod(x, n)
}

func randBelow(t testing.TB, n *big.Int) *big.Int {
	m, err := rand.Int(rand.Reader, n)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRoundTripAndEdges: decryption of random plaintexts and of 0, 1, N-1; every
// ciphertext has the defining form (1+mN) r^N (c/(1+mN) raised to phi is 1 mod N^2);
// plaintexts outside [0, N) refused.
func TestRoundTripAndEdges(t *testing.T) {
	sk := key(t)
	o := oracle(sk)
	for _, m := range []*big.Int{big.NewInt(0), big.NewInt(1), new(big.Int).Sub(sk.N, one), randBelow(t, sk.N), randBelow(t, sk.N)} {
		c, err := sk.Encrypt(rand.Reader, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sk.Decrypt(c)
		if err != nil || got.Cmp(m) != 0 || o.decrypt(sk.N, c).Cmp(m) != 0 {
			t.Fatalf("Dec(Enc(%v)) = %v, %v (textbook formula %v)", m, got, err, o.decrypt(sk.N, c))
		}
		// (1+mN)^-1 * c = r^N: raising to phi gives 1 mod N^2 (the N-th residue has order dividing phi).
		inv := new(big.Int).ModInverse(new(big.Int).Add(new(big.Int).Mul(m, sk.N), one), o.n2)
		z := new(big.Int).Mod(new(big.Int).Mul(inv, c), o.n2)
		if new(big.Int).Exp(z, o.phi, o.n2).Cmp(one) != 0 {
			t.Fatal("c / (1+mN) is not an N-th residue")
		}
	}
	if _, err := sk.Encrypt(rand.Reader, sk.N); err == nil {
		t.Fatal("plaintext N accepted")
	}
	if _, err := sk.Encrypt(rand.Reader, big.NewInt(-1)); err == nil {
		t.Fatal("negative plaintext accepted")
	}
}

// TestAddPlain: Dec(AddPlain(c, m)) = Dec(c) + m mod N, and the result never repeats
// (fresh randomness) even for m = 0.
func TestAddPlain(t *testing.T) {
	sk := key(t)
	a, b := randBelow(t, sk.N), randBelow(t, sk.N)
	c, _ := sk.Encrypt(rand.Reader, a)
	c2, err := sk.AddPlain(rand.Reader, c, b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := sk.Decrypt(c2)
	want := new(big.Int).Mod(new(big.Int).Add(a, b), sk.N)
	if got.Cmp(want) != 0 {
		t.Fatal("AddPlain is not homomorphic")
	}
	z1, _ := sk.AddPlain(rand.Reader, c, big.NewInt(0))
	z2, _ := sk.AddPlain(rand.Reader, c, big.NewInt(0))
	if z1.Cmp(c) == 0 || z1.Cmp(z2) == 0 {
		t.Fatal("AddPlain(c, 0) did not refresh the randomness")
	}
	if v, _ := sk.Decrypt(z1); v.Cmp(a) != 0 {
		t.Fatal("AddPlain(c, 0) changed the plaintext")
	}
}

func TestEncodings(t *testing.T) {
	sk := key(t)
	pk, err := ParsePublicKey(sk.PublicKey.Bytes())
	if err != nil || pk.N.Cmp(sk.N) != 0 {
		t.Fatal("public key round trip", err)
	}
	sk2, err := ParsePrivateKey(sk.Bytes())
	if err != nil || !bytes.Equal(sk2.Bytes(), sk.Bytes()) || sk2.N.Cmp(sk.N) != 0 {
		t.Fatal("private key round trip", err)
	}
	c, _ := pk.Encrypt(rand.Reader, big.NewInt(42))
	c2, err := pk.ParseCiphertext(CiphertextBytes(c))
	if err != nil || c2.Cmp(c) != 0 {
		t.Fatal("ciphertext round trip", err)
	}
	bad := [][]byte{make([]byte, CiphertextLen), bytes.Repeat([]byte{0xff}, CiphertextLen), make([]byte, 3)}
	nb := CiphertextBytes(sk.N) // a multiple of N: not a unit
	bad = append(bad, nb)
	for i, b := range bad {
		if _, err := pk.ParseCiphertext(b); err == nil {
			t.Errorf("bad ciphertext %d accepted", i)
		}
	}
	if _, err := ParsePublicKey(make([]byte, PublicKeyLen)); err == nil {
		t.Error("zero modulus accepted")
	}
	if _, err := sk.Decrypt(big.NewInt(0)); err == nil {
		t.Error("decrypting 0 accepted")
	}
}

func BenchmarkDecrypt(b *testing.B) {
	sk := key(b)
	c, _ := sk.Encrypt(rand.Reader, big.NewInt(7))
	for b.Loop() {
		sk.Decrypt(c)
	}
}

func BenchmarkAddPlain(b *testing.B) {
	sk := key(b)
	c, _ := sk.Encrypt(rand.Reader, big.NewInt(7))
	for b.Loop() {
		sk.AddPlain(rand.Reader, c, big.NewInt(3))
	}
}
