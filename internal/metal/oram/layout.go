package oram

import (
	"fmt"
	"math/bits"

	"github.com/veil-project/veil/internal/metal/circuit"
)

// Layout fixes the bit encoding of a tree held as XOR shares: each block is
// valid (1) | id (IDBits) | leaf (D) | value (ValueBits), little-endian fields; a bucket is
// BucketSize blocks, the stash Stash blocks.
type Layout struct {
	D, Stash, IDBits, ValueBits int
}

// Check validates the layout.
func (l Layout) Check() error {
	if l.D < 1 || l.D > 40 || l.Stash < 1 || l.IDBits < 1 || l.IDBits > 64 || l.ValueBits < 0 || l.ValueBits > 1<<20 {
		return fmt.Errorf("oram: bad layout %+v", l)
	}
	return nil
}

// BlockBits is the size of one encoded block.
func (l Layout) BlockBits() int { return 1 + l.IDBits + l.D + l.ValueBits }

// levelBits is the width of a level number encoded +1 (0 = none, k+1 = level k).
func (l Layout) levelBits() int { return bits.Len(uint(l.D + 2)) }

// Slots is the number of slots of the stash and one path: what an eviction permutes.
func (l Layout) Slots() int { return l.Stash + (l.D+1)*BucketSize }

// SlotBits is the width of a slot number encoded +1.
func (l Layout) SlotBits() int { return bits.Len(uint(l.Slots() + 1)) }

// EncodeBlock returns the bits of b.
func (l Layout) EncodeBlock(b Block) []bool {
	out := []bool{b.Valid}
	out = append(out, circuit.Uint64ToBits(b.ID, l.IDBits)...)
	out = append(out, circuit.Uint64ToBits(b.Leaf, l.D)...)
	return append(out, circuit.Uint64ToBits(b.Value, l.ValueBits)...)
}

// DecodeBlock is the inverse of EncodeBlock (invalid blocks decode to the zero Block only
// if their bits are zero; callers compare encodings). Value holds the value's first 64
// bits: wider values (the position-map trees' records) are read from the bits.
func (l Layout) DecodeBlock(p []bool) Block {
	return Block{
		Valid: p[0],
		ID:    circuit.BitsToUint64(p[1 : 1+l.IDBits]),
		Leaf:  circuit.BitsToUint64(p[1+l.IDBits : 1+l.IDBits+l.D]),
		Value: circuit.BitsToUint64(p[1+l.IDBits+l.D:]),
	}
}

// bw is a block inside a circuit.
type bw struct {
	valid           circuit.Bit
	id, leaf, value circuit.Word
	tr              circuit.Word // eviction only: tracker, the old slot number + 1 (0: none)
}

func (l Layout) split(w circuit.Word) bw {
	return bw{valid: w[0], id: w[1 : 1+l.IDBits], leaf: w[1+l.IDBits : 1+l.IDBits+l.D], value: w[1+l.IDBits+l.D:]}
}

func (b bw) join() circuit.Word {
	w := circuit.Word{b.valid}
	w = append(w, b.id...)
	w = append(w, b.leaf...)
	return append(w, b.value...)
}

// sharedBlocks declares n shared blocks and returns them reconstructed.
func (l Layout) sharedBlocks(b *circuit.Builder, n int) []bw {
	w := b.SharedInput(n * l.BlockBits())
	out := make([]bw, n)
	for i := range out {
		out[i] = l.split(w[i*l.BlockBits() : (i+1)*l.BlockBits()])
	}
	return out
}

func outputBlocks(b *circuit.Builder, blocks []bw) {
	for _, x := range blocks {
		b.Output(circuit.Shared, x.join()...)
	}
}

func muxBlock(b *circuit.Builder, sel circuit.Bit, x, y bw) bw {
	return bw{
		valid: b.Xor(x.valid, b.And(sel, b.Xor(x.valid, y.valid))),
		id:    b.Mux(sel, x.id, y.id),
		leaf:  b.Mux(sel, x.leaf, y.leaf),
		value: b.Mux(sel, x.value, y.value),
		tr:    muxTracker(b, sel, x.tr, y.tr),
	}
}

// muxTracker muxes trackers, a nil tracker standing for zero.
func muxTracker(b *circuit.Builder, sel circuit.Bit, x, y circuit.Word) circuit.Word {
	if x == nil && y == nil {
		return nil
	}
	n := max(len(x), len(y))
	if x == nil {
		x = circuit.Const(0, n)
	}
	if y == nil {
		y = circuit.Const(0, n)
	}
	return b.Mux(sel, x, y)
}

func (l Layout) zeroBlock() bw {
	return l.split(circuit.Const(0, l.BlockBits()))
}

// insertFirstEmpty writes x into the first invalid slot of lv if cond; it returns whether
// it was placed.
func insertFirstEmpty(b *circuit.Builder, lv []bw, x bw, cond circuit.Bit) circuit.Bit {
	placed := b.Not(cond)
	for i := range lv {
		put := b.And(b.Not(lv[i].valid), b.Not(placed))
		lv[i] = muxBlock(b, put, lv[i], x)
		placed = b.Or(placed, put)
	}
	return b.And(cond, placed)
}
