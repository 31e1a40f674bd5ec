package twopc

import "encoding/binary"

// transpose64 transposes a 64x64 bit matrix in place: bit c of a[r] moves to bit r of a[c]
// (the recursive block swap of Hacker's Delight, section 7-3, least significant bit first).
func transpose64(a *[64]uint64) {
	m := uint64(0x00000000FFFFFFFF)
	for j := 32; j != 0; j >>= 1 {
		for k := 0; k < 64; k = (k + j + 1) &^ j {
			t := ((a[k] >> uint(j)) ^ a[k+j]) & m
			a[k] ^= t << uint(j)
			a[k+j] ^= t
		}
		m ^= m << uint(j>>1)
	}
}

// transposeBlock turns 128 columns of 128 bits (cols[i][off:off+16], bit j of column i is
// bit j%8 of byte j/8) into 128 rows: bit i of rows[j] is bit j of column i.
func transposeBlock(cols [][]byte, off int, rows []Label) {
	var a, b, c, d [64]uint64
	for i := 0; i < 64; i++ {
		a[i] = binary.LittleEndian.Uint64(cols[i][off:])
		b[i] = binary.LittleEndian.Uint64(cols[i][off+8:])
		c[i] = binary.LittleEndian.Uint64(cols[64+i][off:])
		d[i] = binary.LittleEndian.Uint64(cols[64+i][off+8:])
	}
	transpose64(&a)
	transpose64(&b)
	transpose64(&c)
	transpose64(&d)
	for j := 0; j < 64; j++ {
		rows[j] = Label{a[j], c[j]}
		rows[64+j] = Label{b[j], d[j]}
	}
}
