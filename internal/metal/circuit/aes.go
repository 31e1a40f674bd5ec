package circuit

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"sync"
)

// aes128Bristol is the Bristol Fashion AES-128 circuit (key expansion included: 6400 AND,
// 28176 XOR, 2087 INV), as distributed with the MPC circuits of Nigel Smart's group and
// shipped in github.com/markkurossi/mpc (MIT) as pkg/crypto/aes/aes_128.circ; the
// uncompressed text has SHA-256 f432558c8341a91a695f3a7d1377c78a76e51785a24c0f25ee555aa1319b22bb
// (checked by a test), and its output is checked against crypto/aes.
//
//go:embed bristol/aes_128.txt.gz
var aes128Gz []byte

var (
	aesOnce sync.Once
	aesBr   *Bristol
	aesErr  error
)

// AES128Bristol returns the parsed embedded AES-128 circuit.
func AES128Bristol() (*Bristol, error) {
	aesOnce.Do(func() {
		var zr *gzip.Reader
		if zr, aesErr = gzip.NewReader(bytes.NewReader(aes128Gz)); aesErr != nil {
			return
		}
		aesBr, aesErr = ParseBristol(zr)
	})
	return aesBr, aesErr
}

// reverseBytes maps a word in BytesToBits order to the Bristol AES circuit's order (the
// 128-bit big-endian integer, least significant bit first) and back: the map is its own
// inverse.
func reverseBytes(w Word) Word {
	out := make(Word, len(w))
	n := len(w) / 8
	for i := range w {
		out[i] = w[(n-1-i/8)*8+i%8]
	}
	return out
}

// AES128 returns AES-128_key(block) for 128-bit words in BytesToBits order (byte i of the
// key or block is bits 8i..8i+7): 6400 AND gates, fewer when bits are public constants.
func (b *Builder) AES128(key, block Word) Word {
	br, err := AES128Bristol()
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		return make(Word, 128)
	}
	out := b.Include(br, reverseBytes(key), reverseBytes(block))
	if out == nil {
		return make(Word, 128)
	}
	return reverseBytes(out[0])
}
