package mle

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/verr"
)

var suites = []Suite{SHA256, BLAKE3}

var sizes = []int{0, 1, 15, 16, 17, 4 << 10, 1<<20 + 1}

func msgOf(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := mrand.New(mrand.NewPCG(seed, uint64(n)))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func each(t *testing.T, f func(t *testing.T, m *MLE)) {
	for _, su := range suites {
		for _, sc := range Schemes {
			m := &MLE{Suite: su, Scheme: sc}
			t.Run(sc.String()+"/"+su.String(), func(t *testing.T) { f(t, m) })
		}
	}
}

func TestRoundTrip(t *testing.T) {
	random := mrand.IntN(3 << 20)
	each(t, func(t *testing.T, m *MLE) {
		for _, n := range append(sizes, random) {
			msg := msgOf(n, 1)
			c, k, tag, err := m.Encrypt(context.Background(), LocalKeys{}, msg)
			if err != nil {
				t.Fatal(err)
			}
			if len(c) != n+m.Scheme.Overhead() {
				t.Fatalf("size %d: ciphertext %d bytes, want %d", n, len(c), n+m.Scheme.Overhead())
			}
			got, err := Dec(k, c, GuardLocal)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("size %d: Dec = %v, equal=%v", n, err, bytes.Equal(got, msg))
			}
			// Streaming agrees with one-shot.
			var sc bytes.Buffer
			res, err := m.Seal(context.Background(), LocalKeys{}, bytes.NewReader(msg), &sc)
			if err != nil {
				t.Fatal(err)
			}
			if res.Key != k || res.Tag != tag || res.Size != int64(len(c)) {
				t.Fatalf("size %d: Seal result differs from Encrypt", n)
			}
			if m.Scheme != RCE && !bytes.Equal(sc.Bytes(), c) {
				t.Fatalf("size %d: Seal bytes differ from Enc", n)
			}
			var out bytes.Buffer
			if err := Open(k, bytes.NewReader(sc.Bytes()), int64(sc.Len()), &out, nil); err != nil || !bytes.Equal(out.Bytes(), msg) {
				t.Fatalf("size %d: Open = %v", n, err)
			}
			st, err := TagGenStream(bytes.NewReader(c), int64(len(c)))
			if err != nil || st != tag {
				t.Fatalf("size %d: TagGenStream = %x, %v; want %x", n, st, err, tag)
			}
		}
	})
}

// Tag correctness: independent encryptions of one message have one tag.
func TestTagCorrectness(t *testing.T) {
	each(t, func(t *testing.T, m *MLE) {
		msg := msgOf(5000, 7)
		_, _, t1, _ := m.Encrypt(context.Background(), LocalKeys{}, msg)
		m2 := &MLE{Suite: m.Suite, Scheme: m.Scheme}
		_, _, t2, _ := m2.Encrypt(context.Background(), LocalKeys{}, msg)
		if t1 != t2 {
			t.Fatalf("tags differ for the same message: %x %x", t1, t2)
		}
		_, _, t3, _ := m.Encrypt(context.Background(), LocalKeys{}, msgOf(5000, 8))
		if t1 == t3 {
			t.Fatal("different messages share a tag")
		}
	})
}

// RCE decryption correctness: ciphertexts are randomized, yet any user's key (derived from
// the same message) opens any user's ciphertext.
func TestRCECrossUser(t *testing.T) {
	for _, su := range suites {
		msg := msgOf(10000, 3)
		a, ka, _, _ := (&MLE{Suite: su, Scheme: RCE}).Encrypt(context.Background(), LocalKeys{}, msg)
		b, kb, _, _ := (&MLE{Suite: su, Scheme: RCE}).Encrypt(context.Background(), LocalKeys{}, msg)
		if bytes.Equal(a, b) {
			t.Fatal("RCE ciphertexts of one message are equal: L is not random")
		}
		for _, c := range [][]byte{a, b} {
			for _, k := range []Key{ka, kb} {
				if got, err := Dec(k, c, nil); err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("%v: cross-user Dec failed: %v", su, err)
				}
			}
		}
	}
}

func TestDeterministicSchemesDedup(t *testing.T) {
	for _, sc := range []Scheme{CE, HCE1, HCE2} {
		msg := msgOf(777, 9)
		a, _, _, _ := New(sc).Encrypt(context.Background(), LocalKeys{}, msg)
		b, _, _, _ := New(sc).Encrypt(context.Background(), LocalKeys{}, msg)
		if !bytes.Equal(a, b) {
			t.Fatalf("%v is not deterministic", sc)
		}
	}
}

// fakeCtxt is the slides' FakeCtxt(M, M'): a ciphertext carrying the honest tag of M that
// decrypts under M's key to M'.
func fakeCtxt(t *testing.T, m *MLE, msg, evil []byte) []byte {
	k := m.KeyGen(msg)
	switch m.Scheme {
	case CE:
		c, _ := m.Enc(k, evil) // the best the attacker can do: E(K, M')
		return c
	case HCE1, HCE2:
		c, _ := m.Enc(k, evil) // E(K, M') || H(K)
		return c
	case RCE:
		c, _ := m.Enc(k, evil) // E(L, M') || L^K || H(K)
		return c
	}
	t.Fatal("unknown scheme")
	return nil
}

// TestDuplicateFaking plays the slides' attack: user A knows the M that B will store and
// uploads FakeCtxt(M, M') first. A storage service deduplicating on TagGen keeps only A's
// ciphertext if the tags match; B later gets it back and decrypts with his key. The attack
// succeeds when B silently receives M'.
func TestDuplicateFaking(t *testing.T) {
	want := map[Scheme]string{CE: "tags differ", HCE1: "succeeds", HCE2: "detected", RCE: "detected"}
	for _, su := range suites {
		for _, sc := range Schemes {
			m := &MLE{Suite: su, Scheme: sc}
			msg, evil := []byte("B's quarterly report: revenue up 4%"), []byte("B's quarterly report: revenue DOWN 40%")
			ca := fakeCtxt(t, m, msg, evil)
			cb, kb, tb, err := m.Encrypt(context.Background(), LocalKeys{}, msg)
			if err != nil {
				t.Fatal(err)
			}
			ta, _ := TagGen(ca)
			stored := map[Tag][]byte{ta: ca} // the SS, deduplicating on tags
			if _, dup := stored[tb]; !dup {
				stored[tb] = cb
			}
			got, err := Dec(kb, stored[tb], GuardLocal)
			var outcome string
			switch {
			case ta != tb:
				outcome = "tags differ"
				if err != nil || !bytes.Equal(got, msg) {
					t.Fatalf("%v: B cannot read his own file: %v", sc, err)
				}
			case err == nil && bytes.Equal(got, evil):
				outcome = "succeeds"
			case errors.Is(err, ErrIntegrity):
				outcome = "detected"
			default:
				outcome = fmt.Sprintf("unexpected (%v)", err)
			}
			if outcome != want[sc] {
				t.Errorf("%v/%v: attack %s, want %s", sc, su, outcome, want[sc])
			}
			// Guarded schemes also refuse A's fake under B's key when handed it directly.
			if sc.Guarded() {
				if _, err := Dec(kb, ca, GuardLocal); !errors.Is(err, ErrIntegrity) {
					t.Errorf("%v: fake ciphertext accepted: %v", sc, err)
				}
				var out bytes.Buffer
				if err := Open(kb, bytes.NewReader(ca), int64(len(ca)), &out, GuardLocal); !errors.Is(err, ErrIntegrity) || out.Len() != 0 {
					t.Errorf("%v: Open released %d bytes of a fake: %v", sc, out.Len(), err)
				}
			}
		}
	}
}

func TestTamperRejected(t *testing.T) {
	each(t, func(t *testing.T, m *MLE) {
		msg := msgOf(4096, 11)
		c, k, _, _ := m.Encrypt(context.Background(), LocalKeys{}, msg)
		check := func(what string, bad []byte, want error) {
			t.Helper()
			if got, err := Dec(k, bad, GuardLocal); !errors.Is(err, want) || got != nil {
				t.Errorf("%s: Dec = %v, want %v and no plaintext", what, err, want)
			} else if (want == ErrIntegrity) != errors.Is(err, verr.ErrIntegrity) {
				t.Errorf("%s: Dec = %v: errors.Is(err, verr.ErrIntegrity) = %v", what, err, !(want == ErrIntegrity))
			}
			var out bytes.Buffer
			if err := Open(k, bytes.NewReader(bad), int64(len(bad)), &out, GuardLocal); !errors.Is(err, want) || out.Len() != 0 {
				t.Errorf("%s: Open = %v with %d bytes out, want %v and nothing", what, err, out.Len(), want)
			}
		}
		check("empty", nil, ErrIntegrity)
		check("header only", c[:1], ErrIntegrity)
		check("unknown suite", append([]byte{0x7f}, c[1:]...), ErrFormat)
		check("unknown scheme", append([]byte{c[0], 0x7f}, c[2:]...), ErrFormat)
		if !m.Scheme.Guarded() {
			return // HCE1 cannot detect body changes: that is its weakness.
		}
		for _, pos := range []int{HeaderSize, len(c) / 2, len(c) - 1} {
			bad := bytes.Clone(c)
			bad[pos] ^= 0x01
			check(fmt.Sprintf("bit flip at %d", pos), bad, ErrIntegrity)
		}
		check("truncated by one", c[:len(c)-1], ErrIntegrity)
		check("truncated to half", c[:len(c)/2], ErrIntegrity)
		check("extended", append(bytes.Clone(c), 0), ErrIntegrity)
		var wrong Key
		rand.Read(wrong[:])
		if _, err := Dec(wrong, c, GuardLocal); !errors.Is(err, ErrIntegrity) {
			t.Errorf("wrong key: %v", err)
		}
	})
}

func TestSealNeedsSeekerForTwoPassSchemes(t *testing.T) {
	var out bytes.Buffer
	_, err := New(HCE2).Seal(context.Background(), LocalKeys{}, struct{ *bytes.Buffer }{bytes.NewBufferString("x")}, &out)
	if err == nil {
		t.Fatal("HCE2 Seal accepted a non-seekable source")
	}
	// RCE is single pass: any reader works.
	if _, err := New(RCE).Seal(context.Background(), LocalKeys{}, struct{ *bytes.Buffer }{bytes.NewBufferString("x")}, &out); err != nil {
		t.Fatal(err)
	}
}
