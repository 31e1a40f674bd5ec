package access

import (
	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
)

// frontCircuit is an access's first Run. Inputs, all XOR-shared: the capability key (128),
// the client's request (ac.RequestLen*8), the base map (oram.Recursion: BaseEntries
// entries of BaseBits), the new leaf of the id's block in the smallest tree (BaseBits,
// each server's random share). Outputs, in order:
//
//	Public  leaf (BaseBits)          the id's block's current leaf in the smallest tree
//	                                 (T_0 itself when D <= Base; uniformly random)
//	Shared  base map'                that entry replaced by the new leaf
//	Shared  id (D+1)                 the file id if allowed, else the dummy id Files
//	Shared  write (1)                allowed and the op is a write
//	Shared  allowed (1)              the client's verdict
func frontCircuit(p Params) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	r := p.Recursion()
	key := b.SharedInput(128)
	req := b.SharedInput(ac.RequestLen * 8)
	pos := b.SharedInput(r.BaseEntries() * r.BaseBits())
	newLeaf := b.SharedInput(r.BaseBits())

	d := p.D
	allowed, id, op := ac.CheckRequest(b, key, req, p.Files(), d)
	write := b.And(allowed, b.Eq(op, circuit.Const(uint64(ac.Write), 8)))

	leaf, newPos := r.BaseScan(b, pos, id, newLeaf)
	b.Output(circuit.Public, leaf...)
	b.Output(circuit.Shared, newPos...)
	b.Output(circuit.Shared, id...)
	b.Output(circuit.Shared, write, allowed)
	return b.Build()
}

// fit truncates or zero-extends w to n bits (callers know the value fits).
func fit(w circuit.Word, n int) circuit.Word {
	if len(w) >= n {
		return w[:n]
	}
	return append(append(circuit.Word{}, w...), circuit.Const(0, n-len(w))...)
}
