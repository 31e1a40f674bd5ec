package circuit

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bristol is a circuit in Bristol Fashion (the format of the vetted circuits at
// nigelsmart.github.io/MPC-Circuits): input words, then gates over wire numbers, the
// outputs being the last wires. Include replays it into a Builder.
type Bristol struct {
	NumWires int
	Inputs   []int // bits per input word
	Outputs  []int // bits per output word
	Gates    []Gate
}

// Limits on parsed Bristol circuits (the input is untrusted bytes).
const (
	maxBristolWires = 1 << 26
	maxBristolWords = 64
)

// ParseBristol reads a Bristol Fashion circuit with XOR, AND and INV gates. Every gate must
// read wires that are inputs or earlier gates' outputs.
func ParseBristol(r io.Reader) (*Bristol, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	line := 0
	next := func() ([]string, error) {
		for sc.Scan() {
			line++
			if f := strings.Fields(sc.Text()); len(f) > 0 {
				return f, nil
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("bristol: line %d: %v", line+1, err)
		}
		return nil, io.EOF
	}
	bad := func(what string) error { return fmt.Errorf("bristol: line %d: %s", line, what) }
	f, err := next()
	if err != nil || len(f) != 2 {
		return nil, fmt.Errorf("bristol: header: want \"gates wires\"")
	}
	ngates, e1 := strconv.Atoi(f[0])
	nwires, e2 := strconv.Atoi(f[1])
	if e1 != nil || e2 != nil || ngates < 0 || nwires <= 0 || nwires > maxBristolWires || ngates > nwires {
		return nil, bad("bad gate or wire count")
	}
	br := &Bristol{NumWires: nwires}
	if br.Inputs, err = parseSizes(next, bad); err != nil {
		return nil, err
	}
	if br.Outputs, err = parseSizes(next, bad); err != nil {
		return nil, err
	}
	defined := make([]bool, nwires)
	nin, nout := sum(br.Inputs), sum(br.Outputs)
	if nin > nwires || nout > nwires {
		return nil, bad("more input or output bits than wires")
	}
	for i := 0; i < nin; i++ {
		defined[i] = true
	}
	br.Gates = make([]Gate, 0, ngates)
	for len(br.Gates) < ngates {
		if f, err = next(); err != nil {
			return nil, fmt.Errorf("bristol: %d gates declared, %d found", ngates, len(br.Gates))
		}
		g, err := parseGate(f, defined)
		if err != nil {
			return nil, bad(err.Error())
		}
		defined[g.Out] = true
		br.Gates = append(br.Gates, g)
	}
	if _, err := next(); err != io.EOF {
		return nil, bad("data after the last gate")
	}
	for i := nwires - nout; i < nwires; i++ {
		if !defined[i] {
			return nil, fmt.Errorf("bristol: output wire %d never defined", i)
		}
	}
	return br, nil
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}

func parseSizes(next func() ([]string, error), bad func(string) error) ([]int, error) {
	f, err := next()
	if err != nil {
		return nil, bad("missing input/output sizes")
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 1 || n > maxBristolWords || len(f) != n+1 {
		return nil, bad("bad word count")
	}
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i], err = strconv.Atoi(f[i+1])
		if err != nil || sizes[i] < 1 || sizes[i] > maxBristolWires {
			return nil, bad("bad word size")
		}
	}
	return sizes, nil
}

func parseGate(f []string, defined []bool) (Gate, error) {
	wire := func(s string, in bool) (uint32, error) {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v >= len(defined) {
			return 0, fmt.Errorf("bad wire %q", s)
		}
		if in && !defined[v] {
			return 0, fmt.Errorf("wire %d read before it is defined", v)
		}
		if !in && defined[v] {
			return 0, fmt.Errorf("wire %d defined twice", v)
		}
		return uint32(v), nil
	}
	var g Gate
	var err error
	switch {
	case len(f) == 6 && f[0] == "2" && f[1] == "1" && (f[5] == "XOR" || f[5] == "AND"):
		g.Op = XOR
		if f[5] == "AND" {
			g.Op = AND
		}
		if g.A, err = wire(f[2], true); err != nil {
			return g, err
		}
		if g.B, err = wire(f[3], true); err != nil {
			return g, err
		}
		g.Out, err = wire(f[4], false)
	case len(f) == 5 && f[0] == "1" && f[1] == "1" && f[4] == "INV":
		g.Op = INV
		if g.A, err = wire(f[2], true); err != nil {
			return g, err
		}
		g.Out, err = wire(f[3], false)
	default:
		return g, fmt.Errorf("unsupported gate %q", strings.Join(f, " "))
	}
	return g, err
}

// Include replays br into b over the given input words (one per Bristol input, of the
// declared sizes) and returns its output words.
func (b *Builder) Include(br *Bristol, inputs ...Word) []Word {
	if len(inputs) != len(br.Inputs) {
		if b.err == nil {
			b.err = fmt.Errorf("circuit: Bristol circuit takes %d inputs, got %d", len(br.Inputs), len(inputs))
		}
		return nil
	}
	w := make([]Bit, br.NumWires)
	k := 0
	for i, in := range inputs {
		if len(in) != br.Inputs[i] {
			if b.err == nil {
				b.err = fmt.Errorf("circuit: Bristol input %d has %d bits, want %d", i, len(in), br.Inputs[i])
			}
			return nil
		}
		k += copy(w[k:], in)
	}
	for _, g := range br.Gates {
		switch g.Op {
		case XOR:
			w[g.Out] = b.Xor(w[g.A], w[g.B])
		case AND:
			w[g.Out] = b.And(w[g.A], w[g.B])
		case INV:
			w[g.Out] = b.Not(w[g.A])
		}
	}
	out := make([]Word, len(br.Outputs))
	k = br.NumWires - sum(br.Outputs)
	for i, n := range br.Outputs {
		out[i] = append(Word(nil), w[k:k+n]...)
		k += n
	}
	return out
}
