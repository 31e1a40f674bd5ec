package dpf

import (
	"errors"
	"fmt"
	"io"
)

// Format constants (docs/formats/peekaboo-dpf.md).
const (
	Version  = 1
	MaxBits  = 32 // largest domain: 2^32 points
	leafBits = 7  // early termination: a leaf holds 2^7 = 128 output bits
	cwSize   = 17 // a correction word: 16-byte seed and one byte of control bits
	hdrSize  = 3 + 16
	finSize  = 16 // the final correction word
)

// ErrMalformed is wrapped by every key parse error.
var ErrMalformed = errors.New("malformed dpf key")

// cw is one level's correction word.
type cw struct {
	s      seed
	tL, tR uint8
}

// Key is one party's share of a point function.
type Key struct {
	Party uint8 // 0 or 1: the root control bit
	Bits  int   // domain {0,1}^Bits
	root  seed
	cws   []cw // one per tree level: levels(Bits)
	fin   seed // final correction word, 128 output bits
}

// levels is the depth of the tree: the domain's bits less the 7 a leaf holds.
func levels(bits int) int { return max(bits-leafBits, 0) }

// KeySize is the encoded size of a key for a domain of bits bits.
func KeySize(bits int) int { return hdrSize + levels(bits)*cwSize + finSize }

// Gen makes the two keys of the point function at alpha over {0,1}^bits, drawing the two
// root seeds (32 bytes) from rnd (crypto/rand.Reader outside tests).
func Gen(alpha uint64, bits int, rnd io.Reader) (k0, k1 *Key, err error) {
	if bits < 1 || bits > MaxBits {
		return nil, nil, fmt.Errorf("dpf domain of %d bits: want 1..%d", bits, MaxBits)
	}
	if alpha>>bits != 0 {
		return nil, nil, fmt.Errorf("dpf point %d outside a %d-bit domain", alpha, bits)
	}
	var buf [32]byte
	if _, err := io.ReadFull(rnd, buf[:]); err != nil {
		return nil, nil, fmt.Errorf("dpf seeds: %w", err)
	}
	nu := levels(bits)
	s0, s1 := seedFrom(buf[:16]), seedFrom(buf[16:])
	k0 = &Key{Party: 0, Bits: bits, root: s0, cws: make([]cw, nu)}
	k1 = &Key{Party: 1, Bits: bits, root: s1, cws: make([]cw, nu)}
	var t0, t1 uint8 = 0, 1
	for i := 0; i < nu; i++ {
		a := uint8(alpha>>(bits-1-i)) & 1 // most significant bit first
		l0, tl0, r0, tr0 := expand(s0)
		l1, tl1, r1, tr1 := expand(s1)
		c := cw{tL: tl0 ^ tl1 ^ a ^ 1, tR: tr0 ^ tr1 ^ a}
		keep0, keep1, tk0, tk1, tkc := l0, l1, tl0, tl1, c.tL
		if a == 0 {
			c.s = r0.xor(r1) // the lost branch's seeds cancel after correction
		} else {
			c.s = l0.xor(l1)
			keep0, keep1, tk0, tk1, tkc = r0, r1, tr0, tr1, c.tR
		}
		k0.cws[i], k1.cws[i] = c, c
		s0, t0 = keep0.xor(c.s.mask(t0)), tk0^(tkc&t0)
		s1, t1 = keep1.xor(c.s.mask(t1)), tk1^(tkc&t1)
	}
	// On the path t0 XOR t1 = 1, so exactly one party adds fin at the leaf.
	fin := convert(s0).xor(convert(s1)).xor(unit(alpha & (1<<(bits-nu) - 1)))
	k0.fin, k1.fin = fin, fin
	return k0, k1, nil
}

// leaf is the party's 128-bit output word for a leaf reached with (s, t).
func (k *Key) leaf(s seed, t uint8) seed { return convert(s).xor(k.fin.mask(t)) }

// Eval is the party's share of f(x): a bit.
func (k *Key) Eval(x uint64) uint8 {
	s, t := k.root, k.Party
	for i := range k.cws {
		c := &k.cws[i]
		sL, tL, sR, tR := expand(s)
		if x>>(k.Bits-1-i)&1 == 0 {
			s, t = sL.xor(c.s.mask(t)), tL^(c.tL&t)
		} else {
			s, t = sR.xor(c.s.mask(t)), tR^(c.tR&t)
		}
	}
	return k.leaf(s, t).bit(x & (1<<(k.Bits-len(k.cws)) - 1))
}

// EvalFull evaluates the key on every point of the domain, as a bit vector: bit x of the
// result is bit x%64 of word x/64 (a domain under 64 points uses the low bits of one word).
func (k *Key) EvalFull() []uint64 {
	n := 1 << len(k.cws)
	seeds, bits := make([]seed, 1, n), make([]uint8, 1, n)
	seeds[0], bits[0] = k.root, k.Party
	next, nbits := make([]seed, 0, n), make([]uint8, 0, n)
	for i := range k.cws {
		next, nbits = next[:0], nbits[:0]
		c := &k.cws[i]
		for j, s := range seeds {
			t := bits[j]
			sL, tL, sR, tR := expand(s)
			m := c.s.mask(t)
			next = append(next, sL.xor(m), sR.xor(m))
			nbits = append(nbits, tL^(c.tL&t), tR^(c.tR&t))
		}
		seeds, next = next, seeds
		bits, nbits = nbits, bits
	}
	if len(k.cws) == 0 { // at most 128 points: one leaf, its low 2^Bits bits
		w := k.leaf(seeds[0], bits[0])
		if k.Bits == leafBits {
			return []uint64{w.lo, w.hi}
		}
		return []uint64{w.lo & (1<<(1<<k.Bits) - 1)}
	}
	out := make([]uint64, 2*n)
	for j, s := range seeds {
		w := k.leaf(s, bits[j])
		out[2*j], out[2*j+1] = w.lo, w.hi
	}
	return out
}

// Marshal encodes the key: version, party, bits, root seed, the correction words (seed,
// control bits) per level, the final correction word.
func (k *Key) Marshal() []byte {
	b := make([]byte, KeySize(k.Bits))
	b[0], b[1], b[2] = Version, k.Party, uint8(k.Bits)
	k.root.put(b[3:19])
	p := b[hdrSize:]
	for _, c := range k.cws {
		c.s.put(p[:16])
		p[16] = c.tL | c.tR<<1
		p = p[cwSize:]
	}
	k.fin.put(p)
	return b
}

// Parse decodes what Marshal wrote. Untrusted input: one-line errors, never a panic.
func Parse(b []byte) (*Key, error) {
	if len(b) < hdrSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrMalformed, len(b), hdrSize)
	}
	switch {
	case b[0] != Version:
		return nil, fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], Version)
	case b[1] > 1:
		return nil, fmt.Errorf("%w: party %d, want 0 or 1", ErrMalformed, b[1])
	case b[2] < 1 || b[2] > MaxBits:
		return nil, fmt.Errorf("%w: domain of %d bits, want 1..%d", ErrMalformed, b[2], MaxBits)
	case len(b) != KeySize(int(b[2])):
		return nil, fmt.Errorf("%w: %d bytes, want %d for %d bits", ErrMalformed, len(b), KeySize(int(b[2])), b[2])
	}
	k := &Key{Party: b[1], Bits: int(b[2]), root: seedFrom(b[3:19]), cws: make([]cw, levels(int(b[2])))}
	p := b[hdrSize:]
	for i := range k.cws {
		c := cw{s: seedFrom(p[:16]), tL: p[16] & 1, tR: p[16] >> 1 & 1}
		if !c.s.lsbZero() || p[16] > 3 {
			return nil, fmt.Errorf("%w: correction word %d is not canonical", ErrMalformed, i)
		}
		k.cws[i] = c
		p = p[cwSize:]
	}
	k.fin = seedFrom(p)
	return k, nil
}
