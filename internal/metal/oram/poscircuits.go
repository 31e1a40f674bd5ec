package oram

import "github.com/veil-project/veil/internal/metal/circuit"

// The position map's circuits (Recursion, Section 5.3), mirroring PosMap.Access (the
// reference in the clear) step for step.

// BaseScan is the base case inside a circuit (the caller's Run, e.g. Metal's front
// circuit): pos is the base map (BaseEntries entries of BaseBits, entry y = the T_Levels
// leaf of id y), x an id of D+1 bits, newLeaf BaseBits bits. It returns the entry of
// x>>(Levels·Pack), to be output Public, and the map with that entry replaced by newLeaf,
// to be output Shared. A linear scan: ~2·BaseBits AND gates per entry.
func (r Recursion) BaseScan(b *circuit.Builder, pos, x, newLeaf circuit.Word) (leaf, newPos circuit.Word) {
	n, d := r.BaseEntries(), r.BaseBits()
	top := x[r.Levels()*r.Pack:]
	leaf = circuit.Const(0, d)
	for y := 0; y < n; y++ {
		e := pos[y*d : (y+1)*d]
		hit := b.Eq(top, circuit.Const(uint64(y), len(top)))
		leaf = b.XorW(leaf, b.AndBit(hit, e))
		newPos = append(newPos, b.Mux(hit, e, newLeaf)...)
	}
	return leaf, newPos
}

// recordCircuit is T_j's read (j >= 1). Inputs, XOR-shared: stash and the path to the
// public leaf, the id bits x>>((j-1)·Pack) (the low Pack bits pick the entry, the rest are
// the record's id), the record's new leaf (D_j), the child's new leaf (D_{j-1}), and the
// record's initial entries (ValueBits, each party's random share; used only if the record
// does not exist yet: the paper's deamortized initialization, with "not found" as its
// IsInit bit). It finds and removes the record, reveals the child's entry (Public: the leaf
// of x>>((j-1)·Pack) in T_{j-1}), replaces it by the child's new leaf and puts the record
// into the first empty stash slot with its new leaf. Outputs: new stash and path (Shared),
// the child's leaf (Public), overflow (Public).
func (r Recursion) recordCircuit(j int) (*circuit.Circuit, error) {
	l := r.MapLayout(j)
	cd := r.Depth(j - 1)
	b := circuit.NewBuilder()
	stash := l.sharedBlocks(b, l.Stash)
	path := l.sharedBlocks(b, (l.D+1)*BucketSize)
	xw := b.SharedInput(r.Pack + l.IDBits)
	k, id := xw[:r.Pack], xw[r.Pack:]
	newLeaf := b.SharedInput(l.D)
	childNew := b.SharedInput(cd)
	init := b.SharedInput(l.ValueBits)

	rec := init
	found := circuit.Zero
	scan := func(lv []bw) {
		for i := range lv {
			hit := b.And(lv[i].valid, b.Eq(lv[i].id, id))
			rec = b.Mux(hit, rec, lv[i].value)
			found = b.Or(found, hit)
			lv[i].valid = b.And(lv[i].valid, b.Not(hit))
		}
	}
	scan(stash)
	scan(path)
	child := circuit.Const(0, cd)
	var nv circuit.Word
	for e := 0; e < r.Entries(); e++ {
		ent := rec[e*cd : (e+1)*cd]
		hit := b.Eq(k, circuit.Const(uint64(e), r.Pack))
		child = b.XorW(child, b.AndBit(hit, ent))
		nv = append(nv, b.Mux(hit, ent, childNew)...)
	}
	nb := bw{valid: circuit.One, id: id, leaf: newLeaf, value: nv}
	placed := insertFirstEmpty(b, stash, nb, circuit.One)
	outputBlocks(b, stash)
	outputBlocks(b, path)
	b.Output(circuit.Public, child...)
	b.Output(circuit.Public, b.Not(placed))
	return b.Build()
}
