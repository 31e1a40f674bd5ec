package twopc

import (
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/circuit"
)

const tableChunk = 2048 // AND gates per write/read of garbled tables (64 KiB)

// garble computes the zero-labels of every wire of c (labels must hold the input wires'
// zero-labels already) and writes the two-ciphertext half-gates table of every AND gate to
// w, in gate order. Tweaks tweak, tweak+1, ... are used, two per AND gate.
func garble(c *circuit.Circuit, h *hasher, delta Label, labels []Label, tweak uint64, w io.Writer) error {
	buf := make([]byte, 0, tableChunk*32)
	var t [32]byte
	for _, g := range c.Gates {
		switch g.Op {
		case circuit.XOR:
			labels[g.Out] = labels[g.A].xor(labels[g.B])
		case circuit.INV:
			labels[g.Out] = labels[g.A].xor(delta)
		case circuit.AND:
			a0, b0 := labels[g.A], labels[g.B]
			pa, pb := a0.colour(), b0.colour()
			ha0, ha1 := h.hash(a0, tweak), h.hash(a0.xor(delta), tweak)
			hb0, hb1 := h.hash(b0, tweak+1), h.hash(b0.xor(delta), tweak+1)
			tweak += 2
			tg := ha0.xor(ha1).xor(sel(pb, delta))
			wg := ha0.xor(sel(pa, tg))
			te := hb0.xor(hb1).xor(a0)
			we := hb0.xor(sel(pb, te.xor(a0)))
			labels[g.Out] = wg.xor(we)
			tg.put(t[:16])
			te.put(t[16:])
			buf = append(buf, t[:]...)
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	if len(buf) > 0 {
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// evaluate computes the active label of every wire of c (labels must hold the input wires'
// active labels) reading the garbled tables from r.
func evaluate(c *circuit.Circuit, h *hasher, labels []Label, tweak uint64, r io.Reader) error {
	remaining := c.NumAND
	buf := make([]byte, tableChunk*32)
	var chunk []byte
	for _, g := range c.Gates {
		switch g.Op {
		case circuit.XOR:
			labels[g.Out] = labels[g.A].xor(labels[g.B])
		case circuit.INV:
			labels[g.Out] = labels[g.A]
		case circuit.AND:
			if len(chunk) == 0 {
				n := min(remaining, tableChunk)
				chunk = buf[:n*32]
				if _, err := io.ReadFull(r, chunk); err != nil {
					return fmt.Errorf("twopc: reading garbled tables: %w", err)
				}
				remaining -= n
			}
			tg, te := getLabel(chunk[:16]), getLabel(chunk[16:32])
			chunk = chunk[32:]
			a, b := labels[g.A], labels[g.B]
			wg := h.hash(a, tweak).xor(sel(a.colour(), tg))
			we := h.hash(b, tweak+1).xor(sel(b.colour(), te.xor(a)))
			tweak += 2
			labels[g.Out] = wg.xor(we)
		}
	}
	return nil
}
