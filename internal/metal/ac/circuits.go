package ac

import (
	"github.com/veil-project/veil/internal/metal/circuit"
)

// descWires is a Description inside the circuit.
type descWires struct {
	version circuit.Word // 8 bits
	perm    circuit.Word // 8 bits
	pad     circuit.Word // 16 bits, must be zero
	count   circuit.Word // 32 bits
	first   circuit.Word // 64 bits
}

func splitDesc(w circuit.Word) descWires {
	return descWires{version: w[0:8], perm: w[8:16], pad: w[16:32], count: w[32:64], first: w[64:128]}
}

// grantCircuit is CreateAccount's computation. Inputs per party, in order: key share (128),
// nonce share (128), next-file-id share (64). Outputs, all Shared: the capability (384:
// nonce, ciphertext, tag) for files next .. next+files-1 with Read|Write|Share, then the
// new next-file-id (64).
func grantCircuit(files uint32) (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	key := b.SharedInput(128)
	nonce := b.SharedInput(128)
	next := b.SharedInput(64)
	desc := make(circuit.Word, 0, 128)
	desc = append(desc, circuit.Const(descVersion, 8)...)
	desc = append(desc, circuit.Const(uint64(Read|Write|Share), 8)...)
	desc = append(desc, circuit.Const(0, 16)...)
	desc = append(desc, circuit.Const(uint64(files), 32)...)
	desc = append(desc, next...)
	ct, tag := b.EAXSeal(key, nonce, desc)
	b.Output(circuit.Shared, nonce...)
	b.Output(circuit.Shared, ct...)
	b.Output(circuit.Shared, tag...)
	b.Output(circuit.Shared, b.Add(next, circuit.Const(uint64(files), 64))...)
	return b.Build()
}

// CheckAccess appends Metal-AC's check to a circuit under construction: given the key and
// the reconstructed request (capability, file id, op), it returns 1 iff the capability is
// authentic, well-formed, grants op, and covers file. The rest of the computation (the ORAM
// access) gates on it; ORAM work will build on this function.
func CheckAccess(b *circuit.Builder, key, capability, file, op circuit.Word) circuit.Bit {
	msg, ok := b.EAXOpen(key, capability[0:128], capability[128:256], capability[256:384])
	d := splitDesc(msg)
	wellFormed := b.And(b.Eq(d.version, circuit.Const(descVersion, 8)), b.IsZero(d.pad))
	// op must be exactly Read or exactly Write, and granted.
	isRead := b.Eq(op, circuit.Const(uint64(Read), 8))
	isWrite := b.Eq(op, circuit.Const(uint64(Write), 8))
	permOK := b.Or(b.And(isRead, d.perm[0]), b.And(isWrite, d.perm[1]))
	// first <= file < first + count, without overflow: file - first < count.
	count64 := append(append(circuit.Word{}, d.count...), circuit.Const(0, 32)...)
	inRange := b.And(b.Not(b.Less(file, d.first)), b.Less(b.Sub(file, d.first), count64))
	return b.And(b.And(ok, wellFormed), b.And(permOK, inRange))
}

// checkCircuit is the stand-alone access check. Inputs per party: key share (128), request
// share (RequestLen*8). Output: the allowed bit, Shared.
func checkCircuit() (*circuit.Circuit, error) {
	b := circuit.NewBuilder()
	key := b.SharedInput(128)
	req := b.SharedInput(RequestLen * 8)
	capW := req[:CapabilityLen*8]
	file := req[CapabilityLen*8 : CapabilityLen*8+64]
	op := req[CapabilityLen*8+64:]
	b.Output(circuit.Shared, CheckAccess(b, key, capW, file, op))
	return b.Build()
}

// CheckRequest appends the check an access starts with (Metal's and Primitive Metal's):
// req is a client's reconstructed request (RequestLen*8 bits), files the number of file
// ids and d+1 the width of an id. allowed is 1 iff Metal-AC grants the request and the file
// id is below files; id is the file id if allowed, else the dummy id files; op is the
// request's operation (8 bits).
func CheckRequest(b *circuit.Builder, key, req circuit.Word, files uint64, d int) (allowed circuit.Bit, id, op circuit.Word) {
	capW := req[:CapabilityLen*8]
	file := req[CapabilityLen*8 : CapabilityLen*8+64]
	op = req[CapabilityLen*8+64:]
	allowed = b.And(CheckAccess(b, key, capW, file, op), b.Less(file, circuit.Const(files, 64)))
	id = b.Mux(allowed, circuit.Const(files, d+1), file[:d+1])
	return allowed, id, op
}
