package dpf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
)

// seed is a PRG seed, kept as two little-endian words so XORs are two word operations.
type seed struct{ lo, hi uint64 }

func seedFrom(p []byte) seed {
	return seed{binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])}
}

func (s seed) put(p []byte) {
	binary.LittleEndian.PutUint64(p, s.lo)
	binary.LittleEndian.PutUint64(p[8:], s.hi)
}

func (s seed) xor(o seed) seed { return seed{s.lo ^ o.lo, s.hi ^ o.hi} }

// mask returns s if bit is 1 and the zero seed if it is 0 (no branch on the bit).
func (s seed) mask(bit uint8) seed {
	m := -uint64(bit & 1)
	return seed{s.lo & m, s.hi & m}
}

// lsb is the control bit carried in a PRG output half; clear removes it from the seed.
func (s seed) lsb() uint8    { return uint8(s.lo & 1) }
func (s seed) clear() seed   { return seed{s.lo &^ 1, s.hi} }
func (s seed) lsbZero() bool { return s.lo&1 == 0 }

// prgKey returns the public fixed AES key for one half: the first 16 bytes of
// SHA-256("veil peekaboo dpf prg v1 " || side). Public by design: fixed-key AES is used
// as a random permutation, not as a keyed cipher.
func prgKey(side string) cipher.Block {
	h := sha256.Sum256([]byte("veil peekaboo dpf prg v1 " + side))
	b, err := aes.NewCipher(h[:16])
	if err != nil {
		panic(err) // a 16-byte constant key cannot fail
	}
	return b
}

var prgL, prgR, prgC = prgKey("left"), prgKey("right"), prgKey("convert")

// convert turns a leaf seed into 128 output bits: AES_kC(s) XOR s (word lo: bits 0..63).
func convert(s seed) seed {
	var in, out [16]byte
	s.put(in[:])
	prgC.Encrypt(out[:], in[:])
	return seedFrom(out[:]).xor(s)
}

// bit returns bit i (0..127) of s.
func (s seed) bit(i uint64) uint8 {
	if i < 64 {
		return uint8(s.lo>>i) & 1
	}
	return uint8(s.hi>>(i-64)) & 1
}

// unit is the 128-bit word with only bit i set.
func unit(i uint64) seed {
	if i < 64 {
		return seed{lo: 1 << i}
	}
	return seed{hi: 1 << (i - 64)}
}

// expand is the length-doubling PRG G(s) = (AES_kL(s) XOR s, AES_kR(s) XOR s), each half
// split into a seed (least significant bit cleared) and a control bit (that bit).
func expand(s seed) (sL seed, tL uint8, sR seed, tR uint8) {
	var in, out [16]byte
	s.put(in[:])
	prgL.Encrypt(out[:], in[:])
	l := seedFrom(out[:]).xor(s)
	prgR.Encrypt(out[:], in[:])
	r := seedFrom(out[:]).xor(s)
	return l.clear(), l.lsb(), r.clear(), r.lsb()
}
