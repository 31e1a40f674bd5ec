package elgamal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	mrand "math/rand/v2"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/metal vectors")

const vectorFile = "../../../testdata/metal/elgamal-vectors.json"

func keys(t testing.TB, rnd func() *KeyShare) (*KeyShare, *KeyShare, PublicKey) {
	k1, k2 := rnd(), rnd()
	return k1, k2, JoinPublic(&k1.X, &k2.X)
}

func newKey(t testing.TB) func() *KeyShare {
	return func() *KeyShare {
		k, err := NewKeyShare(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
}

func TestRoundTripRerandomizeAndShares(t *testing.T) {
	k1, k2, pk := keys(t, newKey(t))
	data := make([]byte, 4096)
	rand.Read(data)
	cts, err := pk.EncryptBlock(data, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if len(cts) != 256 {
		t.Fatalf("%d ciphertexts for 4 KiB", len(cts))
	}
	s, _ := RandomScalar(rand.Reader)
	rz := pk.NewRerandomizer(s)
	var got []byte
	for i, ct := range cts {
		rr := rz.Apply(ct)
		if i%2 == 1 {
			fresh, _ := RandomScalar(rand.Reader)
			rr = pk.Rerandomize(ct, fresh)
		}
		if bytes.Equal(rr.Marshal(), ct.Marshal()) {
			t.Fatal("rerandomization left the ciphertext unchanged")
		}
		d1, d2 := k1.Partial(rr), k2.Partial(rr)
		m, err := Combine(rr, &d1, &d2)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		got = append(got, m[:]...)
		if i == 0 {
			// One partial alone, or a partial under the wrong share, does not decrypt.
			if _, err := Combine(rr, &d1, &d1); err != ErrDecode {
				t.Fatalf("wrong partial: %v", err)
			}
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatal("decrypted block differs")
	}
	if _, err := pk.EncryptBlock(make([]byte, 17), rand.Reader); err == nil {
		t.Fatal("block of 17 bytes accepted")
	}
}

// A server that alters a ciphertext is caught at decryption (Lizard's check), here for a
// flipped bit anywhere in C, and for C replaced by another valid element.
func TestAlteredCiphertextDetected(t *testing.T) {
	k1, k2, pk := keys(t, newKey(t))
	var chunk [ChunkLen]byte
	copy(chunk[:], "sixteen byte msg")
	ct, _ := pk.Encrypt(&chunk, rand.Reader)
	raw := ct.Marshal()
	detected, tried := 0, 0
	for bit := 0; bit < 256; bit++ {
		p := append([]byte{}, raw...)
		p[32+bit/8] ^= 1 << (bit % 8)
		alt, err := UnmarshalCiphertext(p)
		if err != nil {
			continue // not even a group element: refused at parse time
		}
		tried++
		d1, d2 := k1.Partial(alt), k2.Partial(alt)
		if _, err := Combine(alt, &d1, &d2); err == ErrDecode {
			detected++
		}
	}
	if detected != tried {
		t.Fatalf("%d of %d altered ciphertexts decrypted without error", tried-detected, tried)
	}
	other, _ := pk.Encrypt(&chunk, rand.Reader)
	mixed := Ciphertext{R: ct.R, C: other.C}
	d1, d2 := k1.Partial(mixed), k2.Partial(mixed)
	if _, err := Combine(mixed, &d1, &d2); err != ErrDecode {
		t.Fatalf("spliced ciphertext: %v", err)
	}
}

type vector struct {
	Seed       string `json:"seed"`
	PublicKey  string `json:"public_key"`
	Chunk      string `json:"chunk"`
	Ciphertext string `json:"ciphertext"`
}

// Vectors: keys and encryption randomness from ChaCha8 with the seed (x1, x2, then r, each
// from 64 bytes reduced mod the group order).
func TestVectors(t *testing.T) {
	var vs []vector
	for i, msg := range []string{"00000000000000000000000000000000", "000102030405060708090a0b0c0d0e0f"} {
		seed := [32]byte{byte(i + 1)}
		rnd := mrand.NewChaCha8(seed)
		k1, _ := NewKeyShare(rnd)
		k2, _ := NewKeyShare(rnd)
		pk := JoinPublic(&k1.X, &k2.X)
		var chunk [ChunkLen]byte
		m, _ := hex.DecodeString(msg)
		copy(chunk[:], m)
		ct, err := pk.Encrypt(&chunk, rnd)
		if err != nil {
			t.Fatal(err)
		}
		d1, d2 := k1.Partial(ct), k2.Partial(ct)
		if back, err := Combine(ct, &d1, &d2); err != nil || back != chunk {
			t.Fatalf("vector %d does not decrypt", i)
		}
		vs = append(vs, vector{Seed: hex.EncodeToString(seed[:]), PublicKey: hex.EncodeToString(pk.P.Bytes()),
			Chunk: msg, Ciphertext: hex.EncodeToString(ct.Marshal())})
	}
	got, _ := json.MarshalIndent(vs, "", "  ")
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(vectorFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(vectorFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encodings differ from %s (byte for byte)", vectorFile)
	}
}

func FuzzUnmarshalCiphertext(f *testing.F) {
	pk := JoinPublic(&mustKey(f).X, &mustKey(f).X)
	var chunk [ChunkLen]byte
	ct, _ := pk.Encrypt(&chunk, rand.Reader)
	f.Add(ct.Marshal())
	f.Add(make([]byte, CiphertextLen))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		c, err := UnmarshalCiphertext(p)
		if err != nil {
			return
		}
		if !bytes.Equal(c.Marshal(), p) {
			t.Fatalf("non-canonical encoding accepted: %x", p)
		}
	})
}

func mustKey(f *testing.F) *KeyShare {
	k, err := NewKeyShare(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	return k
}

func BenchmarkEncryptChunk(b *testing.B) {
	k, _ := NewKeyShare(rand.Reader)
	pk := JoinPublic(&k.X, &k.X)
	var chunk [ChunkLen]byte
	for i := 0; i < b.N; i++ {
		if _, err := pk.Encrypt(&chunk, rand.Reader); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRerandomize: with a fresh scalar (the distributed permutation's case).
func BenchmarkRerandomize(b *testing.B) {
	k, _ := NewKeyShare(rand.Reader)
	pk := JoinPublic(&k.X, &k.X)
	var chunk [ChunkLen]byte
	ct, _ := pk.Encrypt(&chunk, rand.Reader)
	s, _ := RandomScalar(rand.Reader)
	for i := 0; i < b.N; i++ {
		ct = pk.Rerandomize(ct, s)
	}
}

// BenchmarkRerandomizeShared: one precomputed (sG, sP) applied (SS-DOT's case).
func BenchmarkRerandomizeShared(b *testing.B) {
	k, _ := NewKeyShare(rand.Reader)
	pk := JoinPublic(&k.X, &k.X)
	var chunk [ChunkLen]byte
	ct, _ := pk.Encrypt(&chunk, rand.Reader)
	s, _ := RandomScalar(rand.Reader)
	rz := pk.NewRerandomizer(s)
	for i := 0; i < b.N; i++ {
		ct = rz.Apply(ct)
	}
}

// BenchmarkPartial: one server's decryption share of one chunk.
func BenchmarkPartial(b *testing.B) {
	k, _ := NewKeyShare(rand.Reader)
	pk := JoinPublic(&k.X, &k.X)
	var chunk [ChunkLen]byte
	ct, _ := pk.Encrypt(&chunk, rand.Reader)
	for i := 0; i < b.N; i++ {
		k.Partial(ct)
	}
}
