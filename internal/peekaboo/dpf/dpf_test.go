package dpf

import (
	"bytes"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"strconv"
	"testing"
)

func testRand(n uint64) *mrand.ChaCha8 {
	var s [32]byte
	s[0], s[1] = byte(n), byte(n>>8)
	return mrand.NewChaCha8(s)
}

// TestPointFunctionWholeDomain checks Eval0 XOR Eval1 = f_alpha on every point of the
// domain, for every domain size up to 12 bits and many random points each, through both
// Eval and EvalFull, and after a Marshal/Parse round trip.
func TestPointFunctionWholeDomain(t *testing.T) {
	r := testRand(1)
	for n := 1; n <= 12; n++ {
		for trial := 0; trial < 24; trial++ {
			alpha := r.Uint64() & (1<<n - 1)
			k0, k1, err := Gen(alpha, n, r)
			if err != nil {
				t.Fatal(err)
			}
			k0, k1 = roundTrip(t, k0), roundTrip(t, k1)
			f0, f1 := k0.EvalFull(), k1.EvalFull()
			ones := 0
			for x := uint64(0); x < 1<<n; x++ {
				e0, e1 := k0.Eval(x), k1.Eval(x)
				if e0 != uint8(f0[x/64]>>(x%64)&1) || e1 != uint8(f1[x/64]>>(x%64)&1) {
					t.Fatalf("n=%d x=%d: Eval and EvalFull disagree", n, x)
				}
				want := uint8(0)
				if x == alpha {
					want = 1
				}
				if e0^e1 != want {
					t.Fatalf("n=%d alpha=%d x=%d: Eval0^Eval1 = %d, want %d", n, alpha, x, e0^e1, want)
				}
				ones += int(e0)
			}
			if n >= 8 && (ones < 1<<n/4 || ones > 3<<n/4) {
				t.Fatalf("n=%d: party 0's share has %d ones of %d: not a random-looking share", n, ones, 1<<n)
			}
		}
	}
}

// TestLargeDomain checks f at alpha, its neighbours and random points for 20..32 bits.
func TestLargeDomain(t *testing.T) {
	r := testRand(2)
	for _, n := range []int{20, 24, 32} {
		alpha := r.Uint64() & (1<<n - 1)
		k0, k1, err := Gen(alpha, n, r)
		if err != nil {
			t.Fatal(err)
		}
		pts := []uint64{alpha, alpha ^ 1, alpha ^ 1<<(n-1), 0, 1<<n - 1}
		for i := 0; i < 200; i++ {
			pts = append(pts, r.Uint64()&(1<<n-1))
		}
		for _, x := range pts {
			if got, want := k0.Eval(x)^k1.Eval(x), x == alpha; (got == 1) != want {
				t.Fatalf("n=%d x=%d: got %d", n, x, got)
			}
		}
	}
}

func roundTrip(t *testing.T, k *Key) *Key {
	t.Helper()
	b := k.Marshal()
	if len(b) != KeySize(k.Bits) {
		t.Fatalf("key of %d bytes, KeySize says %d", len(b), KeySize(k.Bits))
	}
	p, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.Marshal(), b) {
		t.Fatal("parse/marshal does not round-trip")
	}
	return p
}

// TestKeySize pins the size: 19 + 17 (bits-7) + 16 bytes (16 bits: 188).
func TestKeySize(t *testing.T) {
	k0, _, err := Gen(5, 16, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(k0.Marshal()); got != 188 || KeySize(16) != 188 {
		t.Fatalf("16-bit key: %d bytes, want 188", got)
	}
}

// TestKeyLooksRandom: over many keys, every bit position of a party's key (except the
// fixed header and the always-zero seed bit of each correction word) is set about half
// the time, and no differently for alpha = 0 than for alpha = all ones. Deterministic
// randomness, so the bounds (about 6 standard deviations) cannot flake.
func TestKeyLooksRandom(t *testing.T) {
	const n, keys = 10, 4000
	r := testRand(3)
	for party := 0; party < 2; party++ {
		counts := map[uint64][]int{}
		for _, alpha := range []uint64{0, 1<<n - 1} {
			c := make([]int, KeySize(n)*8)
			for i := 0; i < keys; i++ {
				k0, k1, err := Gen(alpha, n, r)
				if err != nil {
					t.Fatal(err)
				}
				b := [2]*Key{k0, k1}[party].Marshal()
				for j := range c {
					c[j] += int(b[j/8] >> (j % 8) & 1)
				}
			}
			counts[alpha] = c
		}
		for j := 3 * 8; j < KeySize(n)*8; j++ {
			off := j - hdrSize*8
			if off >= 0 && off < levels(n)*cwSize*8 && (off%(cwSize*8) == 0 || off%(cwSize*8) >= 16*8+2) {
				continue // the cleared seed bit and unused control-bit positions
			}
			for alpha, c := range counts {
				if c[j] < keys/2-200 || c[j] > keys/2+200 {
					t.Fatalf("party %d alpha %d: key bit %d set %d of %d times", party, alpha, j, c[j], keys)
				}
			}
			if d := counts[0][j] - counts[1<<n-1][j]; d > 280 || d < -280 {
				t.Fatalf("party %d: key bit %d depends on alpha (%d vs %d)", party, j, counts[0][j], counts[1<<n-1][j])
			}
		}
	}
}

func TestGenRefuses(t *testing.T) {
	for _, c := range []struct {
		alpha uint64
		bits  int
	}{{0, 0}, {0, 33}, {16, 4}, {1 << 40, 32}} {
		if _, _, err := Gen(c.alpha, c.bits, rand.Reader); err == nil {
			t.Fatalf("Gen(%d, %d) accepted", c.alpha, c.bits)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	k0, _, _ := Gen(3, 10, testRand(4))
	good := k0.Marshal()
	mut := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   mut(func(b []byte) []byte { b[0] = 2; return b }),
		"party":     mut(func(b []byte) []byte { b[1] = 2; return b }),
		"bits 0":    mut(func(b []byte) []byte { b[2] = 0; return b }),
		"bits 33":   mut(func(b []byte) []byte { b[2] = 33; return b }),
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"seed lsb":  mut(func(b []byte) []byte { b[hdrSize] |= 1; return b }),
		"tbits":     mut(func(b []byte) []byte { b[hdrSize+16] = 4; return b }),
	} {
		if _, err := Parse(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Parse = %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range []int{1, 4, 16} {
		k0, k1, _ := Gen(1, n, testRand(uint64(n)))
		f.Add(k0.Marshal())
		f.Add(k1.Marshal())
	}
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if !bytes.Equal(k.Marshal(), b) {
			t.Fatal("accepted key does not re-encode to itself")
		}
		if k.Bits <= 12 {
			k.EvalFull()
		}
		k.Eval(uint64(len(b)) & (1<<k.Bits - 1))
	})
}

func BenchmarkEvalFull(b *testing.B) {
	for _, n := range []int{12, 16, 20} {
		k0, _, _ := Gen(1, n, rand.Reader)
		b.Run("bits="+strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				k0.EvalFull()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(uint64(1)<<n), "ns/point")
		})
	}
}

func BenchmarkGen(b *testing.B) {
	for b.Loop() {
		Gen(12345, 16, rand.Reader)
	}
}
