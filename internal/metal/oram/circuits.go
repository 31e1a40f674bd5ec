package oram

import "github.com/veil-project/veil/internal/metal/circuit"

// The two circuits of one access on one tree, run as separate 2PC Runs so that each is
// fixed for a layout (the same circuit digest every time); the path leaves are public
// inputs, given by party 1 (both parties know them).
//
// readCircuit — inputs, each as XOR shares (circuit SharedInput, party 1's share first):
// stash (Stash blocks), the path to the public leaf (D+1 buckets, root first), id, the
// random new leaf (each party's share is fresh randomness: the paper's shared random tape),
// write (1 bit), new value. Outputs: new stash and path (Shared), old value and found
// (Shared), the new leaf (Shared), the slot the block was read from and the stash slot it
// went to (Shared, slotBits each: what DataORAM needs for Sections 5.4-5.5), and overflow
// (Public: the ORAM failure event).
func (l Layout) readCircuit() (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	stash := l.sharedBlocks(b, l.Stash)
	path := l.sharedBlocks(b, (l.D+1)*BucketSize)
	id := b.SharedInput(l.IDBits)
	newLeaf := b.SharedInput(l.D)
	write := b.SharedInput(1)[0]
	newValue := b.SharedInput(l.ValueBits)

	old := circuit.Const(0, l.ValueBits)
	found := circuit.Zero
	w := l.SlotBits()
	from := circuit.Const(0, w) // slot the block was read from (Section 5.4's index i)
	j := 0
	scan := func(lv []bw) {
		for i := range lv {
			hit := b.And(lv[i].valid, b.Eq(lv[i].id, id))
			old = b.Mux(hit, old, lv[i].value)
			found = b.Or(found, hit)
			from = b.XorW(from, b.AndBit(hit, circuit.Const(uint64(j), w)))
			lv[i].valid = b.And(lv[i].valid, b.Not(hit))
			j++
		}
	}
	// The reference scans the stash (level 0) first, then the path root to leaf.
	scan(stash)
	scan(path)
	nb := bw{valid: circuit.One, id: id, leaf: newLeaf, value: b.Mux(write, old, newValue)}
	// Insert into the first empty stash slot, remembering which (Section 5.5's k).
	placed := circuit.Zero
	to := circuit.Const(0, w)
	for i := range stash {
		put := b.And(b.Not(stash[i].valid), b.Not(placed))
		stash[i] = muxBlock(b, put, stash[i], nb)
		to = b.XorW(to, b.AndBit(put, circuit.Const(uint64(i), w)))
		placed = b.Or(placed, put)
	}
	outputBlocks(b, stash)
	outputBlocks(b, path)
	b.Output(circuit.Shared, old...)
	b.Output(circuit.Shared, found)
	b.Output(circuit.Shared, newLeaf...)
	b.Output(circuit.Shared, from...)
	b.Output(circuit.Shared, to...)
	b.Output(circuit.Public, b.Not(placed))
	return b.Build()
}

// evictCircuit is one EvictOnceFast on the path to a public leaf. Inputs: the leaf (D bits,
// party 1; public), then shares of the stash and of the path's D+1 buckets. Outputs: their
// new shares, then the eviction's permutation of the stash+path slots (Section 5.6, one
// slotBits-bit number per slot: slot j now holds what slot perm[j] held), Shared, unless
// track is false (the position-map trees, which have no DataORAM to keep in step).
func (l Layout) evictCircuit(track bool) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	leaf := b.Input(1, l.D)
	stash := l.sharedBlocks(b, l.Stash)
	path := l.sharedBlocks(b, (l.D+1)*BucketSize)
	levels := [][]bw{stash}
	for d := 0; d <= l.D; d++ {
		levels = append(levels, path[d*BucketSize:(d+1)*BucketSize])
	}
	e := evictor{b: b, l: l, leaf: leaf, w: l.levelBits()}
	if track {
		attachTrackers(levels, l.SlotBits())
	}
	e.run(levels)
	var perm []circuit.Word
	if track {
		perm = trackedPermutation(b, levels, l.SlotBits())
	}
	outputBlocks(b, stash)
	outputBlocks(b, path)
	for _, p := range perm {
		b.Output(circuit.Shared, p...)
	}
	return b.Build()
}
