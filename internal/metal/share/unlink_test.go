package share

import (
	"crypto/rand"
	"math"
	"math/big"
	"math/bits"
	"testing"
)

// TestRerandomizedAnonymsUnlinkable (guarantee g, and (f) for repeated sends): what each
// server receives for two uses of one anonym is as unrelated as for uses of two different
// anonyms.
//
//   - Ciphertext bytes: over n rerandomizations of anonym A and of anonym B, the bit
//     agreement between consecutive uses of A and between A's and B's uses, over the low
//     500 bytes of each ciphertext, are both within 6 sigma of 1/2.
//   - The algebraic link a plain AddPlain without fresh randomness would leave
//     (c' / c = 1 + rN, so c'/c = 1 mod N) is absent.
//   - The share each server decrypts differs on every use and its low 64 bits agree
//     between uses no more than chance.
func TestRerandomizedAnonymsUnlinkable(t *testing.T) {
	r := serverKeys(t)
	pk1, pk2 := &r[0].SK.PublicKey, &r[1].SK.PublicKey
	k := UserKeys{ID: 7}
	rand.Read(k.AK[:])
	a, _ := NewAnonym(k, 1, pk1, pk2, rand.Reader)
	b, _ := NewAnonym(k, 2, pk1, pk2, rand.Reader)
	const n = 24
	var ua, ub []Anonym
	for i := 0; i < n; i++ {
		x, err := a.Rerandomize(pk1, pk2, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		y, _ := b.Rerandomize(pk1, pk2, rand.Reader)
		ua, ub = append(ua, x), append(ub, y)
	}
	agree := func(x, y []byte) (same, total int) {
		for i := range x {
			same += 8 - bits.OnesCount8(x[i]^y[i])
		}
		return same, 8 * len(x)
	}
	low := func(an Anonym) []byte { m := an.Marshal(); return append(m[13:513], m[525:1025]...) }
	var sameAA, sameAB, total int
	for i := 1; i < n; i++ {
		s1, tot := agree(low(ua[i-1]), low(ua[i]))
		s2, _ := agree(low(ua[i]), low(ub[i]))
		sameAA, sameAB, total = sameAA+s1, sameAB+s2, total+tot
	}
	sigma := math.Sqrt(float64(total)) / 2
	for name, s := range map[string]int{"same anonym": sameAA, "different anonyms": sameAB} {
		if d := math.Abs(float64(s) - float64(total)/2); d > 6*sigma {
			t.Errorf("%s: %d of %d bits agree (%.1f sigma from 1/2)", name, s, total, d/sigma)
		}
	}
	inv := new(big.Int).ModInverse(a.C1, new(big.Int).Mul(pk1.N, pk1.N))
	for _, x := range ua {
		q := new(big.Int).Mod(new(big.Int).Mul(x.C1, inv), pk1.N)
		if q.Cmp(big.NewInt(1)) == 0 {
			t.Fatal("a rerandomized ciphertext is c(1+rN): linkable to the original")
		}
	}
	seen := map[string]bool{}
	lowAgree := 0
	var prev *big.Int
	for _, x := range ua {
		v, err := r[0].SK.Decrypt(x.C1)
		if err != nil {
			t.Fatal(err)
		}
		if seen[v.String()] {
			t.Fatal("server 1 decrypted the same share twice")
		}
		seen[v.String()] = true
		if prev != nil {
			lowAgree += 64 - bits.OnesCount64(v.Uint64()^prev.Uint64())
		}
		prev = v
		if v.BitLen() > WideBits {
			t.Fatalf("a decrypted share has %d bits, more than the circuit's %d", v.BitLen(), WideBits)
		}
	}
	tot := 64 * (n - 1)
	if d := math.Abs(float64(lowAgree) - float64(tot)/2); d > 6*math.Sqrt(float64(tot))/2 {
		t.Errorf("server 1's decrypted shares: low bits agree %d of %d", lowAgree, tot)
	}
}
