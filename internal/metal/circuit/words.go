package circuit

import "fmt"

// Const returns the n-bit constant v (little-endian; n <= 64).
func Const(v uint64, n int) Word {
	w := make(Word, n)
	for i := range w {
		w[i] = Zero
		if i < 64 && v>>uint(i)&1 == 1 {
			w[i] = One
		}
	}
	return w
}

// ConstBytes returns the constant whose bit 8*i+j is bit j of p[i] (the wire order of
// BytesToBits).
func ConstBytes(p []byte) Word {
	w := make(Word, 8*len(p))
	for i := range w {
		w[i] = Zero
		if p[i/8]>>(uint(i)%8)&1 == 1 {
			w[i] = One
		}
	}
	return w
}

func (b *Builder) sameLen(x, y Word, op string) bool {
	if len(x) != len(y) {
		if b.err == nil {
			b.err = fmt.Errorf("circuit: %s of %d-bit and %d-bit words", op, len(x), len(y))
		}
		return false
	}
	return true
}

// XorW returns x XOR y bitwise; it is also how XOR shares are reconstructed (free).
func (b *Builder) XorW(x, y Word) Word {
	if !b.sameLen(x, y, "XOR") {
		return make(Word, len(x))
	}
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.Xor(x[i], y[i])
	}
	return z
}

// AndW returns x AND y bitwise.
func (b *Builder) AndW(x, y Word) Word {
	if !b.sameLen(x, y, "AND") {
		return make(Word, len(x))
	}
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.And(x[i], y[i])
	}
	return z
}

// NotW returns NOT x bitwise.
func (b *Builder) NotW(x Word) Word {
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.Not(x[i])
	}
	return z
}

// Mux returns y if sel is 1, else x (one AND per bit).
func (b *Builder) Mux(sel Bit, x, y Word) Word {
	if !b.sameLen(x, y, "Mux") {
		return make(Word, len(x))
	}
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.Xor(x[i], b.And(sel, b.Xor(x[i], y[i])))
	}
	return z
}

// AndBit returns x with every bit ANDed with s (s ? x : 0).
func (b *Builder) AndBit(s Bit, x Word) Word {
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.And(s, x[i])
	}
	return z
}

// IsZero returns 1 iff every bit of x is 0 (len(x)-1 ANDs).
func (b *Builder) IsZero(x Word) Bit {
	r := One
	for _, v := range x {
		r = b.And(r, b.Not(v))
	}
	return r
}

// Eq returns 1 iff x == y.
func (b *Builder) Eq(x, y Word) Bit {
	if !b.sameLen(x, y, "Eq") {
		return Zero
	}
	return b.IsZero(b.XorW(x, y))
}

// Less returns 1 iff x < y as unsigned integers (one AND per bit: the borrow of x - y).
func (b *Builder) Less(x, y Word) Bit {
	if !b.sameLen(x, y, "Less") {
		return Zero
	}
	borrow := Zero
	for i := range x {
		// borrow' = x_i == y_i ? borrow : y_i
		borrow = b.Xor(borrow, b.And(b.Xor(x[i], y[i]), b.Xor(y[i], borrow)))
	}
	return borrow
}

// Add returns x + y mod 2^len (one AND per bit).
func (b *Builder) Add(x, y Word) Word { return b.addCarry(x, y, Zero) }

// Sub returns x - y mod 2^len.
func (b *Builder) Sub(x, y Word) Word { return b.addCarry(x, b.NotW(y), One) }

func (b *Builder) addCarry(x, y Word, c Bit) Word {
	if !b.sameLen(x, y, "Add") {
		return make(Word, len(x))
	}
	z := make(Word, len(x))
	for i := range x {
		z[i] = b.Xor(b.Xor(x[i], y[i]), c)
		if i+1 < len(x) {
			// carry' = majority(x, y, c) = c XOR ((x XOR c) AND (y XOR c))
			c = b.Xor(c, b.And(b.Xor(x[i], c), b.Xor(y[i], c)))
		}
	}
	return z
}

// SharedInput declares an n-bit value held as XOR shares (party 1's share, then party 2's)
// and returns the reconstructed value: the way reactive state and client requests enter
// the computation (paper Section 3).
func (b *Builder) SharedInput(n int) Word {
	s1 := b.Input(1, n)
	s2 := b.Input(2, n)
	return b.XorW(s1, s2)
}

// BytesToBits returns the wire-order bits of p: bit 8*i+j is bit j of p[i].
func BytesToBits(p []byte) []bool {
	out := make([]bool, 8*len(p))
	for i := range out {
		out[i] = p[i/8]>>(uint(i)%8)&1 == 1
	}
	return out
}

// BitsToBytes packs bits in the order of BytesToBits; len(bits) must be a multiple of 8.
func BitsToBytes(bits []bool) []byte {
	out := make([]byte, (len(bits)+7)/8)
	for i, v := range bits {
		if v {
			out[i/8] |= 1 << (uint(i) % 8)
		}
	}
	return out
}

// Uint64ToBits returns the n low bits of v, little-endian.
func Uint64ToBits(v uint64, n int) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = i < 64 && v>>uint(i)&1 == 1
	}
	return out
}

// BitsToUint64 is the inverse of Uint64ToBits for up to 64 bits.
func BitsToUint64(bits []bool) uint64 {
	var v uint64
	for i, x := range bits {
		if x && i < 64 {
			v |= 1 << uint(i)
		}
	}
	return v
}
