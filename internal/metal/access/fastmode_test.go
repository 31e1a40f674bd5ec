package access

import (
	"crypto/aes"
	"math"
	mrand "math/rand/v2"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
)

// The leaf an access reveals, in the fast in-memory mode (the front circuit evaluated in
// the clear, deterministic randomness): over 2,000 accesses each, a sequence that hits one
// file and a sequence that sweeps all files give leaf histograms that both pass a chi-square
// test against the uniform distribution (16 leaves, threshold at p = 10^-6), and every
// revealed leaf is the one the file's previous access stored (the position map works).
func TestRevealedLeafUniformWhateverTheSequence(t *testing.T) {
	p := Params{D: 4, Stash: 6, BlockSize: 16, FilesPerAccount: 16, Pack: 3, Base: 10} // the base map is the whole map
	c, err := frontCircuit(p)
	if err != nil {
		t.Fatal(err)
	}
	src := mrand.NewChaCha8([32]byte{7})
	rng := mrand.New(src)
	key := make([]byte, 16)
	src.Read(key)
	capability := sealCapability(t, key, ac.Description{Perm: ac.Read | ac.Write, First: 0, Count: 16})
	for _, seq := range []struct {
		name string
		next func(i int) uint64
	}{
		{"one file", func(int) uint64 { return 3 }},
		{"all files", func(i int) uint64 { return uint64(i % 16) }},
	} {
		name, next := seq.name, seq.next
		n := int(p.Files()) + 1
		pos := make([]uint64, n)
		for j := range pos {
			pos[j] = rng.Uint64N(p.Files())
		}
		hist := make([]int, p.Files())
		const accesses = 2000
		for i := 0; i < accesses; i++ {
			file := next(i)
			r := ac.Request{File: file, Op: ac.Perm(1 + i%2)}
			copy(r.Capability[:], capability)
			s1, s2, _ := r.Split(src)
			k1 := make([]byte, 16)
			src.Read(k1)
			nl := rng.Uint64N(p.Files())
			var posBits []bool
			for _, v := range pos {
				posBits = append(posBits, circuit.Uint64ToBits(v, p.D)...)
			}
			in1 := append(append(circuit.BytesToBits(k1), circuit.BytesToBits(s1)...), posBits...)
			in1 = append(in1, circuit.Uint64ToBits(nl, p.D)...)
			in2 := append(circuit.BytesToBits(xor(k1, key)), circuit.BytesToBits(s2)...)
			in2 = append(append(in2, make([]bool, len(posBits))...), make([]bool, p.D)...)
			out, err := c.Eval(in1, in2)
			if err != nil {
				t.Fatal(err)
			}
			leaf := circuit.BitsToUint64(out[:p.D])
			allowed := out[len(out)-1]
			if !allowed || leaf != pos[file] {
				t.Fatalf("%s, access %d: allowed %v, leaf %d, the map says %d", name, i, allowed, leaf, pos[file])
			}
			hist[leaf]++
			for j := range pos {
				pos[j] = circuit.BitsToUint64(out[p.D+j*p.D : p.D+(j+1)*p.D])
			}
			if pos[file] != nl {
				t.Fatalf("%s, access %d: new leaf %d not stored (%d)", name, i, nl, pos[file])
			}
		}
		exp := float64(accesses) / float64(p.Files())
		chi := 0.0
		for _, h := range hist {
			chi += math.Pow(float64(h)-exp, 2) / exp
		}
		if chi > 51.0 { // chi-square, 15 degrees of freedom, p = 10^-6
			t.Fatalf("%s: leaf histogram %v, chi-square %.1f", name, hist, chi)
		}
		t.Logf("%s: chi-square %.1f over %d leaves", name, chi, p.Files())
	}
}

func sealCapability(t *testing.T, key []byte, d ac.Description) []byte {
	blk, _ := aes.NewCipher(key)
	aead, err := eax.NewEAX(blk)
	if err != nil {
		t.Fatal(err)
	}
	c := make([]byte, 16, ac.CapabilityLen)
	plain := d.Encode()
	return aead.Seal(c, c[:16], plain[:], nil)
}

func xor(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}
