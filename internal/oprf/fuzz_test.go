package oprf

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"
)

// The server evaluates attacker-chosen elements: any bytes either evaluate or fail with
// ErrFormat, never panic.
func FuzzEvaluate(f *testing.F) {
	k := testKey(f, Ristretto255)
	bl, _ := k.Public().Blind(rand.Reader, [][]byte{{1}})
	f.Add(bl.Elements[0])
	f.Add(make([]byte, 32))
	f.Add(bytes.Repeat([]byte{0xff}, 32))
	f.Fuzz(func(t *testing.T, b []byte) {
		k.Evaluate([][]byte{b})
	})
}

func FuzzParsePublicKey(f *testing.F) {
	k := testKey(f, Ristretto255)
	pk, _ := k.Public().MarshalBinary()
	f.Add(byte(1), pk)
	f.Add(byte(2), []byte{0x30, 0x82, 0x01, 0x22})
	f.Fuzz(func(t *testing.T, s byte, b []byte) {
		ParsePublicKey(SuiteID(s), b)
	})
}

// The client finalizes what the (untrusted) key server answered: any evaluation and proof
// bytes either verify, because they are the honest answer, or fail with ErrVerify.
func FuzzFinalize(f *testing.F) {
	k := testKey(f, Ristretto255)
	in := [][]byte{{1}, {2}}
	bl, err := k.Public().Blind(rand.Reader, in)
	if err != nil {
		f.Fatal(err)
	}
	evals, proof, err := k.Evaluate(bl.Elements)
	if err != nil {
		f.Fatal(err)
	}
	honest := append(append(append([]byte(nil), evals[0]...), evals[1]...), proof...)
	f.Add(honest)
	f.Add(make([]byte, len(honest)))
	f.Add(bytes.Repeat([]byte{0xff}, len(honest)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 64 {
			return
		}
		ev := [][]byte{b[:32], b[32:min(64, len(b))]}
		keys, err := k.Public().Finalize(bl, ev, b[64:])
		if err == nil {
			if !bytes.Equal(b, honest) {
				t.Fatalf("a forged answer verified")
			}
			if len(keys) != 2 {
				t.Fatalf("%d keys for 2 inputs", len(keys))
			}
		} else if !errors.Is(err, ErrVerify) {
			t.Fatalf("error %v is not ErrVerify", err)
		}
	})
}
