package twopc

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
)

// Label is a 128-bit wire label: L holds bits 0..63 (bytes 0..7 little-endian), H bits
// 64..127. The point-and-permute (colour) bit is bit 0 of L.
type Label struct{ L, H uint64 }

func (a Label) xor(b Label) Label { return Label{a.L ^ b.L, a.H ^ b.H} }

func (a Label) colour() uint64 { return a.L & 1 }

// sel returns a if bit is 1, else the zero label, without branching.
func sel(bit uint64, a Label) Label {
	m := -bit
	return Label{a.L & m, a.H & m}
}

func (a Label) put(p []byte) {
	binary.LittleEndian.PutUint64(p, a.L)
	binary.LittleEndian.PutUint64(p[8:], a.H)
}

func getLabel(p []byte) Label {
	return Label{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])}
}

// fixedKey is the public AES key of the fixed-key permutation pi: the first 16 bytes of
// SHA-256("veil-metal-2pc fixed-key AES v1"). Any public key works; it only has to be the
// same for both parties and not chosen by either of them at run time.
var fixedKey = func() []byte {
	s := sha256.Sum256([]byte("veil-metal-2pc fixed-key AES v1"))
	return s[:16]
}()

// hasher is the garbling hash H(x, t) = pi(y) XOR y with y = sigma(x) XOR t, where pi is
// AES-128 under fixedKey (crypto/aes: AES-NI on amd64), sigma(xL || xH) = (xL XOR xH) || xL
// is the linear orthomorphism of Guo-Katz-Wang-Yu (ePrint 2019/074) and the tweak t is
// unique per half-gate within a session (so per Delta). One AES call per hash: a half-gates
// AND costs 4 calls to garble and 2 to evaluate. See docs/design-metal.md for why this
// (and not the two-call TCCR hash) and what it assumes.
type hasher struct {
	blk cipher.Block
	buf [16]byte
}

func newHasher() *hasher {
	blk, err := aes.NewCipher(fixedKey)
	if err != nil {
		panic(err) // 16-byte constant key: cannot happen
	}
	return &hasher{blk: blk}
}

func (h *hasher) hash(x Label, tweak uint64) Label {
	y := Label{x.L ^ x.H ^ tweak, x.L}
	binary.LittleEndian.PutUint64(h.buf[:8], y.L)
	binary.LittleEndian.PutUint64(h.buf[8:], y.H)
	h.blk.Encrypt(h.buf[:], h.buf[:])
	return Label{binary.LittleEndian.Uint64(h.buf[:8]) ^ y.L, binary.LittleEndian.Uint64(h.buf[8:]) ^ y.H}
}
