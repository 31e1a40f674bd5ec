package primitive

import (
	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
)

const acRequestLen = ac.RequestLen

// frontCircuit is an access's first Run (the same computation as Metal's: the ORAM client
// of Section 5.2 starts with the capability check and the position map). Inputs, all
// XOR-shared: the capability key (128), the client's request (ac.RequestLen*8), the position
// map ((Files+1) entries of D bits), the block's new leaf (D bits, each server's random
// share). Outputs, in order:
//
//	Public  leaf (D)                 the file's current leaf (uniformly random)
//	Shared  position map'            the file's entry replaced by the new leaf
//	Shared  id (D+1)                 the file id if allowed, else the dummy id Files
//	Shared  write (1)                allowed and the op is a write
//	Shared  read (1)                 allowed and the op is a read
//	Shared  allowed (1)              the client's verdict
func frontCircuit(p Params) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	key := b.SharedInput(128)
	req := b.SharedInput(ac.RequestLen * 8)
	n, d := int(p.Files())+1, p.D
	pos := b.SharedInput(n * d)
	newLeaf := b.SharedInput(d)

	allowed, id, op := ac.CheckRequest(b, key, req, p.Files(), d)
	write := b.And(allowed, b.Eq(op, circuit.Const(uint64(ac.Write), 8)))
	read := b.And(allowed, b.Eq(op, circuit.Const(uint64(ac.Read), 8)))

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
	b.Output(circuit.Shared, write, read, allowed)
	return b.Build()
}

// replyCircuit is an access's last Run. Inputs, XOR-shared: the block's old data (the ORAM
// access's output, 8*BlockSize bits) and the read bit. Output, Shared: the data if the
// request was an allowed read, else zeros (a write or a refusal gets a dummy answer of the
// same size).
func replyCircuit(p Params) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	old := b.SharedInput(8 * p.BlockSize)
	read := b.SharedInput(1)[0]
	b.Output(circuit.Shared, b.AndBit(read, old)...)
	return b.Build()
}
