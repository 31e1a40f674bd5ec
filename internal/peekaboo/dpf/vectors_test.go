package dpf

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// testdata/peekaboo/dpf.json pins docs/formats/peekaboo-dpf.md: for fixed root seeds, the
// two keys byte for byte, party 0's full-domain share (hex of the little-endian words) and
// the points where the shares differ; and keys every parser must refuse.

const vectorFile = "../../../testdata/peekaboo/dpf.json"

type keyVec struct {
	Bits   int    `json:"bits"`
	Alpha  uint64 `json:"alpha"`
	Seeds  string `json:"seeds"` // the 32 bytes Gen reads: root seed of party 0, then 1
	Key0   string `json:"key0"`
	Key1   string `json:"key1"`
	Share0 string `json:"share0,omitempty"` // party 0's EvalFull for domains up to 2^10
}

type failVec struct {
	Name string `json:"name"`
	Hex  string `json:"hex"`
}

type dpfVectors struct {
	Keys     []keyVec  `json:"keys"`
	MustFail []failVec `json:"must_fail"`
}

func genVectors() any {
	v := dpfVectors{}
	for i, c := range []struct {
		bits  int
		alpha uint64
	}{{1, 1}, {5, 17}, {7, 100}, {8, 200}, {10, 777}, {16, 40000}, {32, 0xdeadbeef}} {
		seeds := bytes.Repeat([]byte{byte(0x10 + i)}, 32)
		seeds[31] = 0x99
		k0, k1, err := Gen(c.alpha, c.bits, bytes.NewReader(seeds))
		if err != nil {
			panic(err)
		}
		kv := keyVec{Bits: c.bits, Alpha: c.alpha, Seeds: hex.EncodeToString(seeds),
			Key0: hex.EncodeToString(k0.Marshal()), Key1: hex.EncodeToString(k1.Marshal())}
		if c.bits <= 10 {
			kv.Share0 = hex.EncodeToString(words(k0.EvalFull()))
		}
		v.Keys = append(v.Keys, kv)
	}
	k0, _, _ := Gen(3, 10, bytes.NewReader(make([]byte, 32)))
	good := k0.Marshal()
	bad := func(i int, b byte) string { c := bytes.Clone(good); c[i] = b; return hex.EncodeToString(c) }
	v.MustFail = []failVec{
		{"empty", ""}, {"header only", hex.EncodeToString(good[:hdrSize])},
		{"version 2", bad(0, 2)}, {"party 2", bad(1, 2)}, {"bits 0", bad(2, 0)}, {"bits 33", bad(2, 33)},
		{"bits 11 with a 10-bit body", bad(2, 11)}, {"correction seed lsb set", bad(hdrSize, good[hdrSize]|1)},
		{"control byte 4", bad(hdrSize+16, 4)}, {"trailing byte", hex.EncodeToString(append(bytes.Clone(good), 0))},
	}
	return v
}

func words(w []uint64) []byte {
	var b []byte
	for _, x := range w {
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return b
}

func TestVectors(t *testing.T) {
	var v dpfVectors
	testutil.Vectors(t, vectorFile, &v, genVectors)
	if len(v.Keys) == 0 || len(v.MustFail) == 0 {
		t.Fatal("empty vector file")
	}
	for _, kv := range v.Keys {
		k0, k1, err := Gen(kv.Alpha, kv.Bits, bytes.NewReader(testutil.Unhex(t, kv.Seeds)))
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(k0.Marshal()) != kv.Key0 || hex.EncodeToString(k1.Marshal()) != kv.Key1 {
			t.Fatalf("bits %d alpha %d: keys differ from the vector", kv.Bits, kv.Alpha)
		}
		p0, err0 := Parse(testutil.Unhex(t, kv.Key0))
		p1, err1 := Parse(testutil.Unhex(t, kv.Key1))
		if err := errors.Join(err0, err1); err != nil {
			t.Fatal(err)
		}
		if kv.Share0 != "" && hex.EncodeToString(words(p0.EvalFull())) != kv.Share0 {
			t.Fatalf("bits %d: party 0's full-domain share differs from the vector", kv.Bits)
		}
		for _, x := range []uint64{kv.Alpha, kv.Alpha ^ 1, 0} {
			if got := p0.Eval(x) ^ p1.Eval(x); (got == 1) != (x == kv.Alpha) {
				t.Fatalf("bits %d: f(%d) = %d", kv.Bits, x, got)
			}
		}
	}
	for _, f := range v.MustFail {
		if _, err := Parse(testutil.Unhex(t, f.Hex)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Parse = %v, want ErrMalformed", f.Name, err)
		}
	}
}
