package twopc

import (
	"crypto/aes"
	"testing"
)

// BenchmarkAESBlock: one crypto/aes block encryption, the unit cost under the garbling rate.
func BenchmarkAESBlock(b *testing.B) {
	blk, _ := aes.NewCipher(fixedKey)
	var x [16]byte
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		blk.Encrypt(x[:], x[:])
	}
	reportPerCPU(b, cpu, float64(b.N), "AES")
}

// BenchmarkHash: one garbling hash H(x, t).
func BenchmarkHash(b *testing.B) {
	h := newHasher()
	x := Label{1, 2}
	for i := 0; i < b.N; i++ {
		x = h.hash(x, uint64(i))
	}
}
