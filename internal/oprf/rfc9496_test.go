package oprf

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// TestRFC9496Vectors pins the ristretto255 group under the VOPRF (group.go over
// curve25519-voi) to RFC 9496's Appendix A: encodings of the first 16 multiples of the
// generator, the invalid encodings every decoder must refuse (the key server decodes
// attacker-chosen elements), and the one-way map from 64 uniform bytes (HashToGroup).
func TestRFC9496Vectors(t *testing.T) {
	var tv struct {
		Multiples []string `json:"multiples_of_generator"`
		Invalid   []string `json:"invalid_encodings"`
		Uniform   []struct {
			Input, Element string
		} `json:"from_uniform_bytes"`
	}
	b, err := os.ReadFile("../../testdata/oprf/rfc9496-ristretto255.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tv); err != nil {
		t.Fatal(err)
	}
	if len(tv.Multiples) != 16 || len(tv.Invalid) != 29 || len(tv.Uniform) != 7 {
		t.Fatalf("%d multiples, %d invalid, %d uniform: want the RFC's 16, 29, 7", len(tv.Multiples), len(tv.Invalid), len(tv.Uniform))
	}
	g := baseMult(scalarFromUniform(append([]byte{1}, make([]byte, 63)...)))
	sum := newElement() // i*G by repeated addition
	for i, h := range tv.Multiples {
		want := testutil.Unhex(t, h)
		wide := make([]byte, 64)
		wide[0] = byte(i)
		if got := encode(baseMult(scalarFromUniform(wide))); !bytes.Equal(got, want) {
			t.Fatalf("%d*G encodes as %x, RFC %s", i, got, h)
		}
		if got := encode(sum); !bytes.Equal(got, want) {
			t.Fatalf("G+...+G (%d times) encodes as %x, RFC %s", i, got, h)
		}
		e, ok := decodeElement(want)
		if !ok || !bytes.Equal(encode(e), want) {
			t.Fatalf("%d*G: decode and re-encode failed", i)
		}
		if _, err := parseElement(want); (i == 0) != (err != nil) {
			t.Fatalf("%d*G: parseElement error %v (only the identity is refused)", i, err)
		}
		sum.Add(sum, g)
	}
	for i, h := range tv.Invalid {
		if _, ok := decodeElement(testutil.Unhex(t, h)); ok {
			t.Fatalf("invalid encoding %d (%s) decoded", i, h)
		}
		if _, err := parseElement(testutil.Unhex(t, h)); !errors.Is(err, ErrFormat) {
			t.Fatalf("invalid encoding %d: error %v, want ErrFormat", i, err)
		}
	}
	for i, v := range tv.Uniform {
		if got := encode(elementFromUniform(testutil.Unhex(t, v.Input))); !bytes.Equal(got, testutil.Unhex(t, v.Element)) {
			t.Fatalf("uniform bytes %d map to %x, RFC %s", i, got, v.Element)
		}
	}
}
