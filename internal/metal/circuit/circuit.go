package circuit

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Op is a gate's operation.
type Op uint8

const (
	XOR Op = iota // out = a XOR b
	AND           // out = a AND b
	INV           // out = NOT a (b unused)
)

func (o Op) String() string {
	switch o {
	case XOR:
		return "XOR"
	case AND:
		return "AND"
	case INV:
		return "INV"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Gate is one gate; Out is always a fresh wire numbered after A and B.
type Gate struct {
	A, B, Out uint32
	Op        Op
}

// Kind says who learns an output bit.
type Kind uint8

const (
	Public Kind = iota // both parties learn the bit
	Party1             // only party 1 (the garbler) learns it
	Party2             // only party 2 (the evaluator) learns it
	Shared             // each party gets one XOR share; neither learns the bit
)

func (k Kind) String() string {
	switch k {
	case Public:
		return "public"
	case Party1:
		return "party1"
	case Party2:
		return "party2"
	case Shared:
		return "shared"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Output is one output bit of a circuit.
type Output struct {
	Wire uint32
	Kind Kind
}

// Circuit is a boolean circuit over two parties' inputs. Build one with a Builder (or
// ParseBristol); treat it as immutable afterwards.
type Circuit struct {
	In1, In2 int // input bits of party 1 and party 2
	NumWires int
	Gates    []Gate
	Outputs  []Output
	NumAND   int
	digest   [32]byte
}

// Digest is SHA-256 over a canonical encoding of the circuit: two parties that build the
// same circuit get the same digest, and twopc refuses to run when they differ.
func (c *Circuit) Digest() [32]byte { return c.digest }

func (c *Circuit) computeDigest() {
	h := sha256.New()
	var b [13]byte
	h.Write([]byte("veil-metal-circuit-v1"))
	binary.LittleEndian.PutUint32(b[0:], uint32(c.In1))
	binary.LittleEndian.PutUint32(b[4:], uint32(c.In2))
	binary.LittleEndian.PutUint32(b[8:], uint32(c.NumWires))
	h.Write(b[:12])
	for _, g := range c.Gates {
		binary.LittleEndian.PutUint32(b[0:], g.A)
		binary.LittleEndian.PutUint32(b[4:], g.B)
		binary.LittleEndian.PutUint32(b[8:], g.Out)
		b[12] = byte(g.Op)
		h.Write(b[:13])
	}
	for _, o := range c.Outputs {
		binary.LittleEndian.PutUint32(b[0:], o.Wire)
		b[4] = byte(o.Kind)
		h.Write(b[:5])
	}
	copy(c.digest[:], h.Sum(nil))
}

// validate checks the structural invariants the garbler and evaluator rely on.
func (c *Circuit) validate() error {
	if c.In1 < 0 || c.In2 < 0 || c.In1+c.In2 > c.NumWires {
		return fmt.Errorf("circuit: %d+%d inputs exceed %d wires", c.In1, c.In2, c.NumWires)
	}
	next := uint32(c.In1 + c.In2)
	nand := 0
	for i, g := range c.Gates {
		if g.Op > INV {
			return fmt.Errorf("circuit: gate %d: unknown op %d", i, g.Op)
		}
		if g.Out != next {
			return fmt.Errorf("circuit: gate %d writes wire %d, want %d (wires must be in order)", i, g.Out, next)
		}
		if g.A >= g.Out || (g.Op != INV && g.B >= g.Out) {
			return fmt.Errorf("circuit: gate %d reads a wire not yet computed", i)
		}
		if g.Op == AND {
			nand++
		}
		next++
	}
	if int(next) != c.NumWires {
		return fmt.Errorf("circuit: %d wires declared, %d defined", c.NumWires, next)
	}
	for i, o := range c.Outputs {
		if int(o.Wire) >= c.NumWires || o.Kind > Shared {
			return fmt.Errorf("circuit: output %d invalid", i)
		}
	}
	c.NumAND = nand
	return nil
}

// Eval computes the circuit in the clear: the reference that every 2PC run is tested
// against. Outputs are the plain values whatever their Kind.
func (c *Circuit) Eval(in1, in2 []bool) ([]bool, error) {
	if len(in1) != c.In1 || len(in2) != c.In2 {
		return nil, fmt.Errorf("circuit: inputs have %d and %d bits, want %d and %d", len(in1), len(in2), c.In1, c.In2)
	}
	w := make([]bool, c.NumWires)
	copy(w, in1)
	copy(w[c.In1:], in2)
	for _, g := range c.Gates {
		switch g.Op {
		case XOR:
			w[g.Out] = w[g.A] != w[g.B]
		case AND:
			w[g.Out] = w[g.A] && w[g.B]
		case INV:
			w[g.Out] = !w[g.A]
		}
	}
	out := make([]bool, len(c.Outputs))
	for i, o := range c.Outputs {
		out[i] = w[o.Wire]
	}
	return out, nil
}

// OutputsOf returns the indexes of the outputs of kind k, in order.
func (c *Circuit) OutputsOf(k Kind) []int {
	var idx []int
	for i, o := range c.Outputs {
		if o.Kind == k {
			idx = append(idx, i)
		}
	}
	return idx
}
