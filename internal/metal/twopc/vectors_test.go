package twopc

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"github.com/veil-project/veil/internal/testutil"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
)

const vectorFile = "../../../testdata/metal/2pc-vectors.json"

// vectors pins docs/formats/metal-2pc.md: the fixed AES key, the garbling hash, one
// half-gates AND table, and the hello and run-header encodings.
type vectors struct {
	FixedKey string       `json:"fixed_key"`
	Hash     []hashVector `json:"hash"`
	AND      andVector    `json:"and_gate"`
	Hello1   string       `json:"hello_party1"`
	Hello2   string       `json:"hello_party2"`
	Header   headerVector `json:"run_header"`
}

type hashVector struct {
	X     string `json:"x"`
	Tweak uint64 `json:"tweak"`
	H     string `json:"h"`
}

type andVector struct {
	Delta string `json:"delta"`
	A0    string `json:"a0"`
	B0    string `json:"b0"`
	Tweak uint64 `json:"tweak"`
	Table string `json:"table"`    // T_G || T_E
	Out0  string `json:"out_zero"` // zero-label of the output wire
}

type headerVector struct {
	Run    uint64 `json:"run"`
	Tweak  uint64 `json:"tweak"`
	Digest string `json:"digest"`
	Bytes  string `json:"bytes"`
}

func lab(s string) Label {
	p, err := hex.DecodeString(s)
	if err != nil || len(p) != 16 {
		panic("bad label " + s)
	}
	return getLabel(p)
}

func hexLabel(l Label) string {
	var p [16]byte
	l.put(p[:])
	return hex.EncodeToString(p[:])
}

func computeVectors() vectors {
	h := newHasher()
	v := vectors{FixedKey: hex.EncodeToString(fixedKey)}
	for i, x := range []string{"00000000000000000000000000000000", "000102030405060708090a0b0c0d0e0f", "ffffffffffffffffffffffffffffffff"} {
		t := uint64(i) * 0x0123456789
		v.Hash = append(v.Hash, hashVector{X: x, Tweak: t, H: hexLabel(h.hash(lab(x), t))})
	}
	delta, a0, b0 := lab("0f0e0d0c0b0a09080706050403020100"), lab("11111111111111112222222222222222"), lab("33333333333333334444444444444444")
	delta.L |= 1
	labels := []Label{a0, b0, {}}
	var buf bytes.Buffer
	c := andGate()
	if err := garble(c, h, delta, labels, 42, &buf); err != nil {
		panic(err)
	}
	v.AND = andVector{Delta: hexLabel(delta), A0: hexLabel(a0), B0: hexLabel(b0), Tweak: 42,
		Table: hex.EncodeToString(buf.Bytes()), Out0: hexLabel(labels[2])}
	v.Hello1 = hex.EncodeToString(append(magic[:], version, byte(Garbler)))
	v.Hello2 = hex.EncodeToString(append(magic[:], version, byte(Evaluator)))
	var d [32]byte
	copy(d[:], bytes.Repeat([]byte{0xab}, 32))
	hd := header{run: 7, tweak: 12800, digest: d}
	v.Header = headerVector{Run: 7, Tweak: 12800, Digest: hex.EncodeToString(d[:]), Bytes: hex.EncodeToString(hd.encode())}
	return v
}

func TestVectors(t *testing.T) {
	want := testutil.Golden(t, vectorFile, computeVectors())
	// The hash vectors, recomputed from the formula of docs/formats/metal-2pc.md with
	// crypto/aes directly: y = (xL ^ xH ^ t) || xL, H = AES_fixed(y) ^ y.
	var v0 vectors
	json.Unmarshal(want, &v0)
	key, _ := hex.DecodeString(v0.FixedKey)
	blk, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, hv := range v0.Hash {
		x, _ := hex.DecodeString(hv.X)
		xl, xh := binary.LittleEndian.Uint64(x), binary.LittleEndian.Uint64(x[8:])
		y := make([]byte, 16)
		binary.LittleEndian.PutUint64(y, xl^xh^hv.Tweak)
		binary.LittleEndian.PutUint64(y[8:], xl)
		out := make([]byte, 16)
		blk.Encrypt(out, y)
		for i := range out {
			out[i] ^= y[i]
		}
		if hex.EncodeToString(out) != hv.H {
			t.Fatalf("hash(%s, %d) = %x, vector says %s", hv.X, hv.Tweak, out, hv.H)
		}
	}
	// The vector's AND table evaluates correctly on all four inputs.
	var v vectors
	json.Unmarshal(want, &v)
	delta, a0, b0 := lab(v.AND.Delta), lab(v.AND.A0), lab(v.AND.B0)
	table, _ := hex.DecodeString(v.AND.Table)
	for x := 0; x < 4; x++ {
		a, b := a0, b0
		if x&1 == 1 {
			a = a.xor(delta)
		}
		if x&2 == 2 {
			b = b.xor(delta)
		}
		labels := []Label{a, b, {}}
		if err := evaluate(andGate(), newHasher(), labels, v.AND.Tweak, bytes.NewReader(table)); err != nil {
			t.Fatal(err)
		}
		want := lab(v.AND.Out0)
		if x == 3 {
			want = want.xor(delta)
		}
		if labels[2] != want {
			t.Fatalf("AND(%d,%d): wrong output label", x&1, x>>1)
		}
	}
}

func andGate() *circuit.Circuit {
	b := circuit.NewBuilder()
	x, y := b.Input(1, 1), b.Input(2, 1)
	b.Output(circuit.Public, b.And(x[0], y[0]))
	c, err := b.Build()
	if err != nil {
		panic(err)
	}
	return c
}
