package twopc

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"io"
)

// IKNP OT extension (Ishai-Kilian-Nissim-Petrank 2003), semi-honest, producing correlated
// OTs with the garbler's global Delta as the correlation: after extend(m), the receiver
// holds t_j and the sender q_j with t_j = q_j XOR x_j*Delta. The garbler uses q_j directly
// as the zero-label of the evaluator's j-th input wire and the evaluator t_j as its active
// label (the COT form of IKNP that free-XOR garbling needs; no hashing of rows).
//
// Setup: 128 base OTs with the roles reversed (baseot.go): the receiver holds seed pairs
// (k_i^0, k_i^1), the sender learns k_i^{s_i} where s = Delta. Each seed keys an AES-CTR
// stream (the PRG G); both parties consume the streams in lockstep, so each extension
// uses fresh PRG output.

const kappa = 128

func newPRG(seed []byte) cipher.Stream {
	blk, err := aes.NewCipher(seed)
	if err != nil {
		panic(err) // seeds are 16 bytes by construction
	}
	return cipher.NewCTR(blk, make([]byte, aes.BlockSize))
}

type cotSender struct {
	delta Label
	g     [kappa]cipher.Stream // G(k_i^{s_i})
}

type cotReceiver struct {
	g0, g1 [kappa]cipher.Stream
}

// blocksFor returns the column length in bytes for m OTs (m rounded up to 128).
func blocksFor(m int) int { return (m + kappa - 1) / kappa * 16 }

// extend (receiver side) writes the correction matrix u for choices x and returns t_j for
// j < len(x).
func (r *cotReceiver) extend(x []bool, w io.Writer) ([]Label, error) {
	nb := blocksFor(len(x))
	xb := make([]byte, nb)
	for j, v := range x {
		if v {
			xb[j/8] |= 1 << (uint(j) % 8)
		}
	}
	cols := make([][]byte, kappa)
	u := make([]byte, nb)
	for i := 0; i < kappa; i++ {
		t := make([]byte, nb)
		r.g0[i].XORKeyStream(t, t)
		copy(u, xb)
		r.g1[i].XORKeyStream(u, u)
		for k := range u {
			u[k] ^= t[k]
		}
		if _, err := w.Write(u); err != nil {
			return nil, err
		}
		cols[i] = t
	}
	return transposeAll(cols, nb, len(x)), nil
}

// extend (sender side) reads the receiver's u matrix for m OTs and returns q_j.
func (s *cotSender) extend(m int, rd io.Reader) ([]Label, error) {
	nb := blocksFor(m)
	cols := make([][]byte, kappa)
	u := make([]byte, nb)
	for i := 0; i < kappa; i++ {
		q := make([]byte, nb)
		s.g[i].XORKeyStream(q, q)
		if _, err := io.ReadFull(rd, u); err != nil {
			return nil, fmt.Errorf("twopc: reading OT extension matrix: %w", err)
		}
		if bit(s.delta, i) {
			for k := range q {
				q[k] ^= u[k]
			}
		}
		cols[i] = q
	}
	return transposeAll(cols, nb, m), nil
}

func bit(l Label, i int) bool {
	if i < 64 {
		return l.L>>uint(i)&1 == 1
	}
	return l.H>>uint(i-64)&1 == 1
}

func transposeAll(cols [][]byte, nb, m int) []Label {
	rows := make([]Label, nb*8)
	for off := 0; off < nb; off += 16 {
		transposeBlock(cols, off, rows[off*8:off*8+kappa])
	}
	return rows[:m]
}
