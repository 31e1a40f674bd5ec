package oprf

import (
	"bytes"
	"crypto/rand"
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
