package oprf

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
)

var (
	rsaOnce sync.Once
	rsaKey  PrivateKey
)

func testKey(t testing.TB, s SuiteID) PrivateKey {
	t.Helper()
	if s == RSA {
		rsaOnce.Do(func() {
			k, err := GenerateKey(RSA, rand.Reader, 2048)
			if err != nil {
				t.Fatal(err)
			}
			rsaKey = k
		})
		return rsaKey
	}
	k, err := GenerateKey(s, rand.Reader, 0)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func digests(n int, salt string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		h := sha256.Sum256([]byte(salt + string(rune('a'+i))))
		out[i] = h[:]
	}
	return out
}

func derive(t *testing.T, k PrivateKey, pub PublicKey, in [][]byte) ([][KeySize]byte, *Blinded) {
	t.Helper()
	b, err := pub.Blind(rand.Reader, in)
	if err != nil {
		t.Fatal(err)
	}
	ev, proof, err := k.Evaluate(b.Elements)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pub.Finalize(b, ev, proof)
	if err != nil {
		t.Fatal(err)
	}
	return keys, b
}

func TestRoundTrip(t *testing.T) {
	for _, s := range []SuiteID{Ristretto255, RSA} {
		t.Run(s.String(), func(t *testing.T) {
			k := testKey(t, s)
			raw, _ := k.Public().MarshalBinary()
			pub, err := ParsePublicKey(s, raw)
			if err != nil {
				t.Fatal(err)
			}
			if pub.ID() != k.ID() {
				t.Fatal("key id changed through encoding")
			}
			in := digests(5, "x")
			k1, b1 := derive(t, k, pub, in)
			k2, b2 := derive(t, k, pub, in)
			for i := range in {
				if k1[i] != k2[i] {
					t.Fatalf("input %d: same input gave different keys", i)
				}
				if bytes.Equal(b1.Elements[i], b2.Elements[i]) {
					t.Fatalf("input %d: blinded element repeated: the server could link requests", i)
				}
				for j := range i {
					if k1[i] == k1[j] {
						t.Fatalf("inputs %d and %d gave the same key", i, j)
					}
				}
			}
			// The private key survives its encoding.
			sk, _ := k.MarshalBinary()
			k3, err := ParsePrivateKey(s, sk)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := derive(t, k3, pub, in[:1])
			if got[0] != k1[0] {
				t.Fatal("re-parsed private key derives different keys")
			}
			// Another key gives other outputs.
			if s == Ristretto255 {
				other := testKey(t, s)
				got, _ := derive(t, other, other.Public(), in[:1])
				if got[0] == k1[0] {
					t.Fatal("two keys derived the same output")
				}
			}
		})
	}
}

func TestTamperRejected(t *testing.T) {
	for _, s := range []SuiteID{Ristretto255, RSA} {
		t.Run(s.String(), func(t *testing.T) {
			k := testKey(t, s)
			pub := k.Public()
			in := digests(3, "t")
			b, err := pub.Blind(rand.Reader, in)
			if err != nil {
				t.Fatal(err)
			}
			ev, proof, err := k.Evaluate(b.Elements)
			if err != nil {
				t.Fatal(err)
			}
			// A different server key answering is caught.
			wrong := testKey(t, Ristretto255)
			if s == Ristretto255 {
				ev2, proof2, _ := wrong.Evaluate(b.Elements)
				if _, err := pub.Finalize(b, ev2, proof2); !errors.Is(err, ErrVerify) {
					t.Fatalf("evaluation under another key accepted: %v", err)
				}
			}
			// Swapped evaluations.
			sw := [][]byte{ev[1], ev[0], ev[2]}
			if _, err := pub.Finalize(b, sw, proof); !errors.Is(err, ErrVerify) {
				t.Fatalf("swapped evaluations accepted: %v", err)
			}
			// Bit flips in an evaluation and in the proof.
			bad := make([][]byte, len(ev))
			for i := range ev {
				bad[i] = append([]byte(nil), ev[i]...)
			}
			bad[2][5] ^= 1
			if _, err := pub.Finalize(b, bad, proof); !errors.Is(err, ErrVerify) {
				t.Fatalf("flipped evaluation accepted: %v", err)
			}
			if len(proof) > 0 {
				p := append([]byte(nil), proof...)
				p[3] ^= 1
				if _, err := pub.Finalize(b, ev, p); !errors.Is(err, ErrVerify) {
					t.Fatalf("flipped proof accepted: %v", err)
				}
			}
			if _, err := pub.Finalize(b, ev[:2], proof); !errors.Is(err, ErrVerify) {
				t.Fatalf("short answer accepted: %v", err)
			}
		})
	}
}

func TestBadInputs(t *testing.T) {
	k := testKey(t, Ristretto255)
	for _, b := range [][]byte{nil, make([]byte, 32), bytes.Repeat([]byte{0xff}, 32), make([]byte, 31)} {
		if _, _, err := k.Evaluate([][]byte{b}); !errors.Is(err, ErrFormat) {
			t.Fatalf("element %x: got %v, want ErrFormat", b, err)
		}
	}
	if _, err := ParseSuite("ecdsa"); !errors.Is(err, ErrSuite) {
		t.Fatal(err)
	}
	if _, err := GenerateKey(RSA, rand.Reader, 1024); err == nil {
		t.Fatal("1024-bit rsa key accepted")
	}
	if _, err := ParsePublicKey(Ristretto255, []byte("short")); !errors.Is(err, ErrFormat) {
		t.Fatal(err)
	}
	if _, err := ParsePublicKey(RSA, []byte("junk")); !errors.Is(err, ErrFormat) {
		t.Fatal(err)
	}
}

func benchDerive(b *testing.B, s SuiteID, n int) {
	k := testKey(b, s)
	pub := k.Public()
	in := digests(n, "b")
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bl, _ := pub.Blind(rand.Reader, in)
		ev, proof, err := k.Evaluate(bl.Elements)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pub.Finalize(bl, ev, proof); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "derivations/s")
}

func benchEval(b *testing.B, s SuiteID, n int) {
	k := testKey(b, s)
	bl, _ := k.Public().Blind(rand.Reader, digests(n, "e"))
	for b.Loop() {
		if _, _, err := k.Evaluate(bl.Elements); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "evals/s")
}

func BenchmarkDeriveR255Batch64(b *testing.B) { benchDerive(b, Ristretto255, 64) }
func BenchmarkDeriveR255Batch8(b *testing.B)  { benchDerive(b, Ristretto255, 8) }
func BenchmarkDeriveR255One(b *testing.B)     { benchDerive(b, Ristretto255, 1) }
func BenchmarkDeriveRSAOne(b *testing.B)      { benchDerive(b, RSA, 1) }
func BenchmarkEvalR255Batch64(b *testing.B)   { benchEval(b, Ristretto255, 64) }
func BenchmarkEvalR255One(b *testing.B)       { benchEval(b, Ristretto255, 1) }

// The client's two halves of a derivation on their own: Blind, and Finalize (verify the
// batch proof, unblind, hash).
func BenchmarkBlindR255Batch64(b *testing.B) {
	pub := testKey(b, Ristretto255).Public()
	in := digests(64, "bl")
	for b.Loop() {
		if _, err := pub.Blind(rand.Reader, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFinalizeR255Batch64(b *testing.B) { benchFinalize(b, 64) }

// A put of many small files mostly sends one digest per request (session 6: 2,696 of
// 3,363 requests on workload c), so the per-batch work matters as much as the per-input.
func BenchmarkFinalizeR255One(b *testing.B) { benchFinalize(b, 1) }

func benchFinalize(b *testing.B, n int) {
	k := testKey(b, Ristretto255)
	bl, _ := k.Public().Blind(rand.Reader, digests(n, "f"))
	ev, proof, err := k.Evaluate(bl.Elements)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := k.Public().Finalize(bl, ev, proof); err != nil {
			b.Fatal(err)
		}
	}
}
