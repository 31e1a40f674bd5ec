package ac

import (
	"bytes"
	"crypto/aes"
	"encoding/binary"
	"encoding/hex"
	"github.com/veil-project/veil/internal/testutil"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"
	"github.com/veil-project/veil/internal/metal/circuit"
)

const vectorFile = "../../../testdata/metal/capability-vectors.json"

// capVector pins docs/formats/metal-capability.md.
type capVector struct {
	KeyShare1   string `json:"key_share1"`
	KeyShare2   string `json:"key_share2"`
	Nonce       string `json:"nonce"`
	Perm        uint8  `json:"perm"`
	First       uint64 `json:"first"`
	Count       uint32 `json:"count"`
	Description string `json:"description"`
	Capability  string `json:"capability"`
	File        uint64 `json:"file"`
	Op          uint8  `json:"op"`
	Request     string `json:"request"`
}

func unhex(t *testing.T, s string) []byte {
	p, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCapabilityVectors(t *testing.T) {
	vs := []capVector{
		{KeyShare1: "000102030405060708090a0b0c0d0e0f", KeyShare2: "f0e0d0c0b0a090807060504030201000",
			Nonce: "101112131415161718191a1b1c1d1e1f", Perm: uint8(Read | Write | Share), First: 1 << 20, Count: 16, File: 1<<20 + 3, Op: uint8(Write)},
		{KeyShare1: "2b7e151628aed2a6abf7158809cf4f3c", KeyShare2: "00000000000000000000000000000000",
			Nonce: "00000000000000000000000000000000", Perm: uint8(Read), First: 7, Count: 1, File: 7, Op: uint8(Read)},
	}
	grant16, _ := grantCircuit(16)
	grant1, _ := grantCircuit(1)
	check, _ := checkCircuit()
	for i := range vs {
		v := &vs[i]
		k1, k2 := unhex(t, v.KeyShare1), unhex(t, v.KeyShare2)
		key, _ := Combine(k1, k2)
		d := Description{Perm: Perm(v.Perm), First: v.First, Count: v.Count}
		desc := d.Encode()
		v.Description = hex.EncodeToString(desc[:])
		blk, _ := aes.NewCipher(key)
		aead, _ := eax.NewEAX(blk)
		nonce := unhex(t, v.Nonce)
		capb := append(append([]byte{}, nonce...), aead.Seal(nil, nonce, desc[:], nil)...)
		v.Capability = hex.EncodeToString(capb)
		var c [CapabilityLen]byte
		copy(c[:], capb)
		v.Request = hex.EncodeToString(Request{c, v.File, Perm(v.Op)}.encode())

		// The grant circuit (as the servers run it; it grants Read|Write|Share only, read-only
		// capabilities come from SendCapability in the next issue) makes the same capability...
		g := grant1
		if v.Count == 16 {
			g = grant16
		}
		next := make([]byte, 8)
		binary.LittleEndian.PutUint64(next, v.First)
		in1 := append(append(circuit.BytesToBits(k1), circuit.BytesToBits(nonce)...), circuit.BytesToBits(next)...)
		in2 := append(append(circuit.BytesToBits(k2), make([]bool, 128)...), make([]bool, 64)...)
		out, err := g.Eval(in1, in2)
		if err != nil {
			t.Fatal(err)
		}
		if got := circuit.BitsToBytes(out[:CapabilityLen*8]); d.Perm == Read|Write|Share && !bytes.Equal(got, capb) {
			t.Fatalf("vector %d: grant circuit made %x, library EAX %x", i, got, capb)
		}
		if got := binary.LittleEndian.Uint64(circuit.BitsToBytes(out[CapabilityLen*8:])); got != v.First+uint64(v.Count) {
			t.Fatalf("vector %d: next file id %d", i, got)
		}
		// ...and the check circuit admits the vector's request.
		req := unhex(t, v.Request)
		out, err = check.Eval(append(circuit.BytesToBits(k1), circuit.BytesToBits(req)...),
			append(circuit.BytesToBits(k2), make([]bool, RequestLen*8)...))
		if err != nil || !out[0] {
			t.Fatalf("vector %d: request refused (%v)", i, err)
		}
	}
	testutil.Golden(t, vectorFile, vs)
}
