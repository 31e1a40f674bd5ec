package circuit

import "fmt"

// Bit is a wire under construction: a node of the Builder, or one of the constants Zero
// and One (folded away wherever they meet a gate).
type Bit int32

// The two constant bits.
const (
	Zero Bit = -1
	One  Bit = -2
)

// Word is a little-endian vector of bits: w[0] is the least significant.
type Word []Bit

const opInput Op = 0xff

type node struct {
	op    Op // XOR, AND, INV or opInput
	a, b  Bit
	party uint8 // for inputs: 1 or 2
}

// Builder writes a circuit. Its methods never fail; misuse (a Bit from another Builder, an
// output-less circuit) is reported by Build.
type Builder struct {
	nodes   []node
	outputs []builderOutput
	in      [3]int // input counts per party (index 1, 2)
	err     error
}

type builderOutput struct {
	bit  Bit
	kind Kind
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

func (b *Builder) add(n node) Bit {
	b.nodes = append(b.nodes, n)
	return Bit(len(b.nodes) - 1)
}

func (b *Builder) check(x Bit) {
	if x != Zero && x != One && (x < 0 || int(x) >= len(b.nodes)) && b.err == nil {
		b.err = fmt.Errorf("circuit: bit %d does not belong to this builder", x)
	}
}

// Input declares n input bits of party (1 or 2).
func (b *Builder) Input(party int, n int) Word {
	if party != 1 && party != 2 {
		if b.err == nil {
			b.err = fmt.Errorf("circuit: input party %d (want 1 or 2)", party)
		}
		return make(Word, n)
	}
	w := make(Word, n)
	for i := range w {
		w[i] = b.add(node{op: opInput, party: uint8(party)})
	}
	b.in[party] += n
	return w
}

// Xor returns x XOR y (free under free-XOR garbling).
func (b *Builder) Xor(x, y Bit) Bit {
	b.check(x)
	b.check(y)
	switch {
	case x == Zero:
		return y
	case y == Zero:
		return x
	case x == One:
		return b.Not(y)
	case y == One:
		return b.Not(x)
	case x == y:
		return Zero
	}
	return b.add(node{op: XOR, a: x, b: y})
}

// And returns x AND y (the one gate that costs: two ciphertexts under half-gates).
func (b *Builder) And(x, y Bit) Bit {
	b.check(x)
	b.check(y)
	switch {
	case x == Zero || y == Zero:
		return Zero
	case x == One:
		return y
	case y == One:
		return x
	case x == y:
		return x
	}
	return b.add(node{op: AND, a: x, b: y})
}

// Not returns NOT x (free).
func (b *Builder) Not(x Bit) Bit {
	b.check(x)
	switch x {
	case Zero:
		return One
	case One:
		return Zero
	}
	if n := b.nodes[x]; n.op == INV {
		return n.a
	}
	return b.add(node{op: INV, a: x})
}

// Or returns x OR y (one AND).
func (b *Builder) Or(x, y Bit) Bit { return b.Not(b.And(b.Not(x), b.Not(y))) }

// Output appends the bits of w as outputs of kind k.
func (b *Builder) Output(k Kind, w ...Bit) {
	for _, x := range w {
		b.check(x)
		b.outputs = append(b.outputs, builderOutput{x, k})
	}
}

// Build numbers the wires (party 1's inputs, party 2's, then gates in creation order) and
// returns the circuit.
func (b *Builder) Build() (*Circuit, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.outputs) == 0 {
		return nil, fmt.Errorf("circuit: no outputs")
	}
	c := &Circuit{In1: b.in[1], In2: b.in[2]}
	wire := make([]uint32, len(b.nodes))
	n1, n2 := uint32(0), uint32(c.In1)
	for i, n := range b.nodes {
		if n.op != opInput {
			continue
		}
		if n.party == 1 {
			wire[i], n1 = n1, n1+1
		} else {
			wire[i], n2 = n2, n2+1
		}
	}
	next := uint32(c.In1 + c.In2)
	for i, n := range b.nodes {
		if n.op == opInput {
			continue
		}
		g := Gate{A: wire[n.a], Op: n.op, Out: next}
		if n.op != INV {
			g.B = wire[n.b]
		}
		c.Gates = append(c.Gates, g)
		wire[i] = next
		next++
	}
	var zero, one uint32
	haveConst := false
	constWire := func(v Bit) (uint32, error) {
		if c.In1+c.In2 == 0 {
			return 0, fmt.Errorf("circuit: constant output in a circuit without inputs")
		}
		if !haveConst {
			haveConst = true
			c.Gates = append(c.Gates, Gate{A: 0, B: 0, Op: XOR, Out: next})
			c.Gates = append(c.Gates, Gate{A: next, Op: INV, Out: next + 1})
			zero, one = next, next+1
			next += 2
		}
		if v == Zero {
			return zero, nil
		}
		return one, nil
	}
	for _, o := range b.outputs {
		w := uint32(0)
		if o.bit == Zero || o.bit == One {
			var err error
			if w, err = constWire(o.bit); err != nil {
				return nil, err
			}
		} else {
			w = wire[o.bit]
		}
		c.Outputs = append(c.Outputs, Output{Wire: w, Kind: o.kind})
	}
	c.NumWires = int(next)
	if err := c.validate(); err != nil {
		return nil, err
	}
	c.computeDigest()
	return c, nil
}
