package circuit

import (
	"bytes"
	"crypto/aes"
	"math/rand/v2"
	"testing"

	"github.com/ProtonMail/go-crypto/eax"
)

// TestEAXSealBlocksAgainstLibrary: 1, 2 and 4 blocks, nonces whose low bytes are 0xff (the
// CTR increment carries across bytes), against github.com/ProtonMail/go-crypto/eax.
func TestEAXSealBlocksAgainstLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	rb := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		return p
	}
	for _, n := range []int{1, 2, 4} {
		b := NewBuilder()
		key, nonce, msg := b.Input(1, 128), b.Input(1, 128), b.Input(2, 128*n)
		ct, tag := b.EAXSealBlocks(key, nonce, msg)
		b.Output(Public, ct...)
		b.Output(Public, tag...)
		c, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			k, nc, m := rb(16), rb(16), rb(16*n)
			if i == 1 {
				copy(nc[12:], []byte{0xff, 0xff, 0xff, 0xff})
			}
			if i == 2 {
				for j := range nc {
					nc[j] = 0xff
				}
			}
			blk, _ := aes.NewCipher(k)
			aead, _ := eax.NewEAX(blk)
			want := aead.Seal(nil, nc, m, nil)
			out, err := c.Eval(append(BytesToBits(k), BytesToBits(nc)...), BytesToBits(m))
			if err != nil {
				t.Fatal(err)
			}
			if got := BitsToBytes(out); !bytes.Equal(got, want) {
				t.Fatalf("%d blocks, case %d: circuit %x, library %x", n, i, got, want)
			}
		}
	}
	b := NewBuilder()
	b.EAXSealBlocks(b.Input(1, 128), b.Input(1, 128), b.Input(2, 100))
	if _, err := b.Build(); err == nil {
		t.Fatal("a message of 100 bits accepted")
	}
}
