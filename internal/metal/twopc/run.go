package twopc

import (
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/circuit"
)

// Run evaluates c on this party's input bits (c.In1 of them for the garbler, c.In2 for the
// evaluator) and returns one bit per output of c:
//
//	Public  the output value (both parties)
//	Party1  the value for the garbler, false for the evaluator
//	Party2  the value for the evaluator, false for the garbler
//	Shared  this party's XOR share: the garbler's is the permute bit of the output wire's
//	        zero-label, the evaluator's the colour bit of its active label
//
// Shared outputs cost no communication; feeding them back as inputs of a later Run
// (circuit.Builder.SharedInput) is how reactive state is carried between calls.
// After an error the session is out of step and must be closed.
func (s *Session) Run(c *circuit.Circuit, in []bool) ([]bool, error) {
	want := c.In1
	if s.role == Evaluator {
		want = c.In2
	}
	if len(in) != want {
		return nil, fmt.Errorf("twopc: party %d input has %d bits, circuit wants %d", s.role, len(in), want)
	}
	if cap(s.labels) < c.NumWires {
		s.labels = make([]Label, c.NumWires)
	}
	labels := s.labels[:c.NumWires]
	if err := s.exchangeHeaders(header{run: s.stats.Runs, tweak: s.tweak, digest: c.Digest()}); err != nil {
		return nil, err
	}
	var out []bool
	var err error
	if s.role == Garbler {
		out, err = s.runGarbler(c, in, labels)
	} else {
		out, err = s.runEvaluator(c, in, labels)
	}
	if err != nil {
		return nil, err
	}
	s.stats.Runs++
	s.stats.ANDGates += uint64(c.NumAND)
	s.stats.OTs += uint64(c.In2)
	s.tweak += 2 * uint64(c.NumAND)
	return out, nil
}

// Message order of one Run (docs/formats/metal-2pc.md):
//
//	1 -> 2: header                     (both headers are sent before either is checked)
//	2 -> 1: header, IKNP matrix u (128 columns)
//	1 -> 2: garbler input labels, AND tables, decode bits (Public and Party2 outputs)
//	2 -> 1: colour bits of Public and Party1 outputs (only if there are any)
func (s *Session) runGarbler(c *circuit.Circuit, in []bool, labels []Label) ([]bool, error) {
	q, err := s.cotS.extend(c.In2, s.rw)
	if err != nil {
		return nil, err
	}
	copy(labels[c.In1:], q)
	rnd := make([]byte, 16*c.In1)
	s.prg.XORKeyStream(rnd, rnd)
	active := make([]byte, 16*c.In1)
	for i := 0; i < c.In1; i++ {
		labels[i] = getLabel(rnd[16*i:])
		l := labels[i]
		if in[i] {
			l = l.xor(s.delta)
		}
		l.put(active[16*i:])
	}
	if _, err := s.rw.Write(active); err != nil {
		return nil, err
	}
	if err := garble(c, s.h, s.delta, labels, s.tweak, s.rw); err != nil {
		return nil, err
	}
	out := make([]bool, len(c.Outputs))
	var decode []bool
	needColours := false
	for i, o := range c.Outputs {
		p := labels[o.Wire].colour() == 1
		switch o.Kind {
		case circuit.Public, circuit.Party2:
			decode = append(decode, p)
		case circuit.Shared:
			out[i] = p
		}
		needColours = needColours || o.Kind == circuit.Public || o.Kind == circuit.Party1
	}
	if _, err := s.rw.Write(circuit.BitsToBytes(decode)); err != nil {
		return nil, err
	}
	if err := s.rw.Flush(); err != nil {
		return nil, err
	}
	if !needColours {
		return out, nil
	}
	var idx []int
	for i, o := range c.Outputs {
		if o.Kind == circuit.Public || o.Kind == circuit.Party1 {
			idx = append(idx, i)
		}
	}
	colours, err := readBits(s.rw, len(idx))
	if err != nil {
		return nil, fmt.Errorf("twopc: reading output colours: %w", err)
	}
	for k, i := range idx {
		out[i] = colours[k] != (labels[c.Outputs[i].Wire].colour() == 1)
	}
	return out, nil
}

func (s *Session) runEvaluator(c *circuit.Circuit, in []bool, labels []Label) ([]bool, error) {
	t, err := s.cotR.extend(in, s.rw)
	if err != nil {
		return nil, err
	}
	if err := s.rw.Flush(); err != nil {
		return nil, err
	}
	copy(labels[c.In1:], t)
	active := make([]byte, 16*c.In1)
	if _, err := io.ReadFull(s.rw, active); err != nil {
		return nil, fmt.Errorf("twopc: reading garbler input labels: %w", err)
	}
	for i := 0; i < c.In1; i++ {
		labels[i] = getLabel(active[16*i:])
	}
	if err := evaluate(c, s.h, labels, s.tweak, s.rw); err != nil {
		return nil, err
	}
	var nDecode int
	for _, o := range c.Outputs {
		if o.Kind == circuit.Public || o.Kind == circuit.Party2 {
			nDecode++
		}
	}
	decode, err := readBits(s.rw, nDecode)
	if err != nil {
		return nil, fmt.Errorf("twopc: reading decode bits: %w", err)
	}
	out := make([]bool, len(c.Outputs))
	var colours []bool
	k := 0
	for i, o := range c.Outputs {
		col := labels[o.Wire].colour() == 1
		switch o.Kind {
		case circuit.Public, circuit.Party2:
			out[i] = col != decode[k]
			k++
		case circuit.Shared:
			out[i] = col
		}
		if o.Kind == circuit.Public || o.Kind == circuit.Party1 {
			colours = append(colours, col)
		}
	}
	if len(colours) > 0 {
		if _, err := s.rw.Write(circuit.BitsToBytes(colours)); err != nil {
			return nil, err
		}
		if err := s.rw.Flush(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readBits(r io.Reader, n int) ([]bool, error) {
	p := make([]byte, (n+7)/8)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	return circuit.BytesToBits(p)[:n], nil
}
