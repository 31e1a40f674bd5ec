package mle

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../testdata/mle/vectors.json"

// vector is one language-neutral test vector. Result is "ok", "integrity" (MUST fail with
// ErrIntegrity) or "format" (MUST fail with ErrFormat).
type vector struct {
	Comment    string `json:"comment,omitempty"`
	Suite      uint8  `json:"suite"`
	Scheme     uint8  `json:"scheme"`
	Message    string `json:"message"`        // hex
	Rand       string `json:"rand,omitempty"` // hex: RCE's L
	Key        string `json:"key"`            // hex: K = H(M) (plain MLE)
	Ciphertext string `json:"ciphertext"`     // hex
	Tag        string `json:"tag,omitempty"`  // hex
	Result     string `json:"result"`
}

func genVectors(t *testing.T) []vector {
	var vs []vector
	msgs := [][]byte{{}, []byte("a"), []byte("abcdefghijklmnopq"), bytes.Repeat([]byte("veil "), 20)}
	for _, su := range suites {
		for _, sc := range Schemes {
			for i, msg := range msgs {
				l := bytes.Repeat([]byte{byte(0xA0 + i)}, Size)
				m := &MLE{Suite: su, Scheme: sc, Rand: bytes.NewReader(l)}
				k := m.KeyGen(msg)
				c, err := m.Enc(k, msg)
				if err != nil {
					t.Fatal(err)
				}
				tag, _ := TagGen(c)
				v := vector{Suite: uint8(su), Scheme: uint8(sc), Message: hex.EncodeToString(msg),
					Key: hex.EncodeToString(k[:]), Ciphertext: hex.EncodeToString(c),
					Tag: hex.EncodeToString(tag[:]), Result: "ok"}
				if sc == RCE {
					v.Rand = hex.EncodeToString(l)
				}
				vs = append(vs, v)
				if i != 2 {
					continue
				}
				bad := func(comment string, c []byte, result string) {
					w := v
					w.Comment, w.Ciphertext, w.Tag, w.Result, w.Rand = comment, hex.EncodeToString(c), "", result, ""
					vs = append(vs, w)
				}
				bad("unknown suite byte", append([]byte{0x00}, c[1:]...), "format")
				bad("truncated before the header ends", c[:1], "integrity")
				if sc.Guarded() {
					f := bytes.Clone(c)
					f[HeaderSize] ^= 0x80
					bad("first body bit flipped", f, "integrity")
					bad("last byte removed", c[:len(c)-1], "integrity")
				}
			}
		}
	}
	return vs
}

func TestVectors(t *testing.T) {
	var vs []vector
	testutil.Vectors(t, vectorFile, &vs, func() any { return genVectors(t) })
	if len(vs) < 40 {
		t.Fatalf("only %d vectors", len(vs))
	}
	h := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	for i, v := range vs {
		var k Key
		copy(k[:], h(v.Key))
		c := h(v.Ciphertext)
		got, err := Dec(k, c, GuardLocal)
		switch v.Result {
		case "ok":
			m := &MLE{Suite: Suite(v.Suite), Scheme: Scheme(v.Scheme), Rand: bytes.NewReader(h(v.Rand))}
			if kg := m.KeyGen(h(v.Message)); kg != k {
				t.Errorf("vector %d: KeyGen = %x, want %s", i, kg, v.Key)
			}
			enc, _ := m.Enc(k, h(v.Message))
			if !bytes.Equal(enc, c) {
				t.Errorf("vector %d: Enc = %x, want %s", i, enc, v.Ciphertext)
			}
			if tag, _ := TagGen(c); hex.EncodeToString(tag[:]) != v.Tag {
				t.Errorf("vector %d: TagGen = %x, want %s", i, tag, v.Tag)
			}
			if err != nil || !bytes.Equal(got, h(v.Message)) {
				t.Errorf("vector %d: Dec = %v", i, err)
			}
		case "integrity", "format":
			want := map[string]error{"integrity": ErrIntegrity, "format": ErrFormat}[v.Result]
			if !errors.Is(err, want) || got != nil {
				t.Errorf("vector %d (%s): Dec = %v, want %v", i, v.Comment, err, want)
			}
		default:
			t.Errorf("vector %d: unknown result %q", i, v.Result)
		}
	}
}
