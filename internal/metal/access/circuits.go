package access

import (
	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
)

// frontCircuit is an access's first Run. Inputs, all XOR-shared: the capability key (128),
// the client's request (ac.RequestLen*8), the position map ((Files+1) entries of D bits),
// the block's new leaf (D bits, each server's random share). Outputs, in order:
//
//	Public  leaf (D)                 the file's current leaf (uniformly random)
//	Shared  position map'            the file's entry replaced by the new leaf
//	Shared  id (D+1)                 the file id if allowed, else the dummy id Files
//	Shared  write (1)                allowed and the op is a write
//	Shared  allowed (1)              the client's verdict
func frontCircuit(p Params) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	key := b.SharedInput(128)
	req := b.SharedInput(ac.RequestLen * 8)
	n, d := int(p.Files())+1, p.D
	pos := b.SharedInput(n * d)
	newLeaf := b.SharedInput(d)

	capW := req[:ac.CapabilityLen*8]
	file := req[ac.CapabilityLen*8 : ac.CapabilityLen*8+64]
	op := req[ac.CapabilityLen*8+64:]
	allowed := b.And(ac.CheckAccess(b, key, capW, file, op), b.Less(file, circuit.Const(p.Files(), 64)))
	id := b.Mux(allowed, circuit.Const(p.Files(), d+1), file[:d+1])
	write := b.And(allowed, b.Eq(op, circuit.Const(uint64(ac.Write), 8)))

	leaf := circuit.Const(0, d)
	var newPos []circuit.Bit
	for j := 0; j < n; j++ {
		e := pos[j*d : (j+1)*d]
		hit := b.Eq(id, circuit.Const(uint64(j), d+1))
		leaf = b.XorW(leaf, b.AndBit(hit, e))
		newPos = append(newPos, b.Mux(hit, e, newLeaf)...)
	}
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
