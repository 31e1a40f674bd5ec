package ac

import "github.com/veil-project/veil/internal/metal/circuit"

// Circuit fragments for Metal-SHARE (internal/metal/share, paper Section 6): the check a
// sender's capability must pass to share a file, and the granting of a one-file capability
// for the receiver, both inside the same 2PC computation as the rest of SendCapability.

// CheckShare appends the share check: the capability is authentic (EAX under key),
// well-formed, carries Share (only account capabilities do: a received capability cannot
// be passed on), and, when file is not nil, covers file. It also returns the description's
// first file id: the account's identity (Metal-SHARE's ID_U), meaningful only when ok.
func CheckShare(b *circuit.Builder, key, capability, file circuit.Word) (ok circuit.Bit, first circuit.Word) {
	msg, tagOK := b.EAXOpen(key, capability[0:128], capability[128:256], capability[256:384])
	d := splitDesc(msg)
	ok = b.And(tagOK, b.And(b.Eq(d.version, circuit.Const(descVersion, 8)), b.IsZero(d.pad)))
	ok = b.And(ok, d.perm[2]) // Share
	if file != nil {
		count64 := append(append(circuit.Word{}, d.count...), circuit.Const(0, 32)...)
		ok = b.And(ok, b.And(b.Not(b.Less(file, d.first)), b.Less(b.Sub(file, d.first), count64)))
	}
	return ok, d.first
}

// GrantFile appends the sealing, under key with a 128-bit nonce, of the capability
// {perm, file, count 1} (perm an 8-bit word) and returns its CapabilityLen*8 bits.
func GrantFile(b *circuit.Builder, key, nonce, file, perm circuit.Word) circuit.Word {
	desc := make(circuit.Word, 0, 128)
	desc = append(desc, circuit.Const(descVersion, 8)...)
	desc = append(desc, perm...)
	desc = append(desc, circuit.Const(0, 16)...)
	desc = append(desc, circuit.Const(1, 32)...)
	desc = append(desc, file...)
	ct, tag := b.EAXSeal(key, nonce, desc)
	out := append(append(append(circuit.Word{}, nonce...), ct...), tag...)
	return out
}
