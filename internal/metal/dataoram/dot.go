package dataoram

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// DOT runs secret-shared doubly oblivious transfers of one of n equal-size blocks.
type DOT struct {
	sess   *twopc.Session
	c      *circuit.Circuit
	n, idx int
	rnd    io.Reader
}

// IndexBits is the width of the shared index for n blocks.
func IndexBits(n int) int { return bits.Len(uint(n - 1)) }

// keyCircuit: party 1 inputs n 128-bit keys, both input shares of the index; party 2 gets
// key[index] (an index >= n gives party 2 the zero key, which opens nothing).
func keyCircuit(n int) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	keys := b.Input(1, n*128)
	w := IndexBits(n)
	idx := b.SharedInput(w)
	out := circuit.Const(0, 128)
	for j := 0; j < n; j++ {
		hit := b.Eq(idx, circuit.Const(uint64(j), w))
		out = b.XorW(out, b.AndBit(hit, keys[j*128:(j+1)*128]))
	}
	b.Output(circuit.Party2, out...)
	return b.Build()
}

// NewDOT prepares transfers of one of n blocks (n >= 2). rnd is Server 1's key and shuffle
// randomness (unused by Server 2).
func NewDOT(sess *twopc.Session, n int, rnd io.Reader) (*DOT, error) {
	if n < 2 {
		return nil, fmt.Errorf("dataoram: DOT over %d blocks", n)
	}
	c, err := keyCircuit(n)
	if err != nil {
		return nil, err
	}
	return &DOT{sess: sess, c: c, n: n, idx: IndexBits(n), rnd: rnd}, nil
}

var (
	nonceZ = make([]byte, 12)
	nonceC = append(make([]byte, 11), 1)
	zero16 = make([]byte, 16)
)

// Send is Server 1's side: idx is its share of the index, blocks the n (rerandomized)
// blocks, all of one length.
func (d *DOT) Send(idx []bool, blocks [][]byte) error {
	if len(idx) != d.idx || len(blocks) != d.n {
		return fmt.Errorf("dataoram: DOT send with %d index bits and %d blocks, want %d and %d", len(idx), len(blocks), d.idx, d.n)
	}
	keys := make([]byte, 16*d.n)
	if _, err := io.ReadFull(d.rnd, keys); err != nil {
		return err
	}
	if _, err := d.sess.Run(d.c, append(circuit.BytesToBits(keys), idx...)); err != nil {
		return err
	}
	var seed [32]byte
	if _, err := io.ReadFull(d.rnd, seed[:]); err != nil {
		return err
	}
	order := rand.New(rand.NewChaCha8(seed)).Perm(d.n)
	msg, err := dotMessage(keys, order, blocks)
	if err != nil {
		return err
	}
	return d.sess.SendMessage(msg)
}

// dotMessage lays out Server 1's message: n, size, then the pairs of blocks order[0],
// order[1], ... (docs/formats/metal-dataoram.md).
func dotMessage(keys []byte, order []int, blocks [][]byte) ([]byte, error) {
	n, size := len(blocks), len(blocks[0])
	pair := 32 + size + 16
	msg := make([]byte, 8, 8+n*pair)
	binary.LittleEndian.PutUint32(msg, uint32(n))
	binary.LittleEndian.PutUint32(msg[4:], uint32(size))
	for _, j := range order {
		if len(blocks[j]) != size {
			return nil, fmt.Errorf("dataoram: block %d has %d bytes, want %d", j, len(blocks[j]), size)
		}
		aead, err := gcm(keys[16*j : 16*j+16])
		if err != nil {
			return nil, err
		}
		msg = aead.Seal(msg, nonceZ, zero16, nil)
		msg = aead.Seal(msg, nonceC, blocks[j], nil)
	}
	return msg, nil
}

// Receive is Server 2's side: idx is its share of the index; it returns block index.
func (d *DOT) Receive(idx []bool) ([]byte, error) {
	if len(idx) != d.idx {
		return nil, fmt.Errorf("dataoram: DOT receive with %d index bits, want %d", len(idx), d.idx)
	}
	out, err := d.sess.Run(d.c, idx)
	if err != nil {
		return nil, err
	}
	aead, err := gcm(circuit.BitsToBytes(out))
	if err != nil {
		return nil, err
	}
	msg, err := d.sess.ReceiveMessage()
	if err != nil {
		return nil, err
	}
	if len(msg) < 8 {
		return nil, errors.New("dataoram: short DOT message")
	}
	n, size := int(binary.LittleEndian.Uint32(msg)), int(binary.LittleEndian.Uint32(msg[4:]))
	pair := 32 + size + 16
	if n != d.n || size > twopc.MaxMessage || len(msg) != 8+n*pair {
		return nil, fmt.Errorf("dataoram: DOT message of %d bytes for %d blocks of %d", len(msg), n, size)
	}
	var found []byte
	for k := 0; k < n; k++ {
		p := msg[8+k*pair : 8+(k+1)*pair]
		if _, err := aead.Open(nil, nonceZ, p[:32], nil); err != nil {
			continue
		}
		if found != nil {
			return nil, errors.New("dataoram: DOT key opened two blocks")
		}
		if found, err = aead.Open(nil, nonceC, p[32:], nil); err != nil {
			return nil, errors.New("dataoram: DOT block does not open")
		}
	}
	if found == nil {
		return nil, errors.New("dataoram: DOT key opened no block (index out of range?)")
	}
	return found, nil
}

func gcm(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}
