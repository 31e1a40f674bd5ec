package ac

import (
	"bytes"
	"crypto/aes"
	"crypto/rand"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"
	"github.com/veil-project/veil/internal/metal/circuit"
)

// sealCap makes a capability the way the servers' circuit does, with the library's EAX.
func sealCap(t testing.TB, key []byte, d Description) [CapabilityLen]byte {
	blk, _ := aes.NewCipher(key)
	aead, err := eax.NewEAX(blk)
	if err != nil {
		t.Fatal(err)
	}
	var c [CapabilityLen]byte
	rand.Read(c[:16])
	plain := d.Encode()
	copy(c[16:], aead.Seal(nil, c[:16], plain[:], nil))
	return c
}

func plainCheck(t *testing.T, c *circuit.Circuit, k1, k2 []byte, r Request) bool {
	s1, s2, err := r.Split(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	in1 := append(circuit.BytesToBits(k1), circuit.BytesToBits(s1)...)
	in2 := append(circuit.BytesToBits(k2), circuit.BytesToBits(s2)...)
	out, err := c.Eval(in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// The check circuit in the clear against the rules, on library-made capabilities.
func TestCheckCircuitRules(t *testing.T) {
	c, err := checkCircuit()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("check circuit: %d AND gates", c.NumAND)
	k1, k2, key := make([]byte, 16), make([]byte, 16), make([]byte, 16)
	rand.Read(k1)
	rand.Read(k2)
	for i := range key {
		key[i] = k1[i] ^ k2[i]
	}
	rw := sealCap(t, key, Description{Perm: Read | Write | Share, First: 100, Count: 10})
	ro := sealCap(t, key, Description{Perm: Read, First: 7, Count: 1})
	edge := sealCap(t, key, Description{Perm: Read, First: ^uint64(0) - 1, Count: 5})
	other := make([]byte, 16)
	rand.Read(other)
	foreign := sealCap(t, other, Description{Perm: Read | Write, First: 0, Count: 1 << 31})
	flip := func(c [CapabilityLen]byte, i int) [CapabilityLen]byte { c[i] ^= 0x10; return c }
	var forged [CapabilityLen]byte
	rand.Read(forged[:])
	cases := []struct {
		name string
		r    Request
		want bool
	}{
		{"owner reads first", Request{rw, 100, Read}, true},
		{"owner writes last", Request{rw, 109, Write}, true},
		{"past range", Request{rw, 110, Read}, false},
		{"before range", Request{rw, 99, Read}, false},
		{"two ops at once", Request{rw, 101, Read | Write}, false},
		{"share is not an access", Request{rw, 101, Share}, false},
		{"read-only reads", Request{ro, 7, Read}, true},
		{"read-only writes", Request{ro, 7, Write}, false},
		{"range near 2^64", Request{edge, ^uint64(0), Read}, true},
		{"wrapped range not covered", Request{edge, 2, Read}, false},
		{"foreign key", Request{foreign, 5, Read}, false},
		{"forged", Request{forged, 100, Read}, false},
		{"nonce altered", Request{flip(rw, 3), 100, Read}, false},
		{"ciphertext altered", Request{flip(rw, 20), 100, Read}, false},
		{"tag altered", Request{flip(rw, 40), 100, Read}, false},
	}
	for _, tc := range cases {
		if got := plainCheck(t, c, k1, k2, tc.r); got != tc.want {
			t.Errorf("%s: allowed=%v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDescriptionRoundTrip(t *testing.T) {
	d := Description{Perm: Read | Share, First: 1 << 40, Count: 77}
	p := d.Encode()
	got, err := DecodeDescription(p[:])
	if err != nil || got != d {
		t.Fatalf("%+v %v", got, err)
	}
	p[2] = 1
	if _, err := DecodeDescription(p[:]); err == nil {
		t.Fatal("nonzero pad accepted")
	}
	if _, err := DecodeDescription(p[:5]); err == nil {
		t.Fatal("short description accepted")
	}
	s1, s2, _ := Request{File: 9, Op: Read}.Split(rand.Reader)
	s1b, _, _ := Request{File: 9, Op: Read}.Split(rand.Reader)
	if bytes.Equal(s1, s1b) {
		t.Fatal("shares not fresh")
	}
	if p, _ := Combine(s1, s2); !bytes.Equal(p, Request{File: 9, Op: Read}.encode()) {
		t.Fatal("shares do not combine")
	}
}

func FuzzDecodeDescription(f *testing.F) {
	p := Description{Perm: Read, First: 5, Count: 2}.Encode()
	f.Add(p[:])
	f.Add([]byte{1, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDescription(b)
		if err != nil {
			return
		}
		if q := d.Encode(); !bytes.Equal(q[:], b) {
			t.Fatalf("decode/encode changed %x to %x", b, q)
		}
	})
}
