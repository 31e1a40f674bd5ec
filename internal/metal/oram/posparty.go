package oram

import (
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// PosParty runs the trees of records of the recursive position map (T_Levels .. T_1)
// inside 2PC, each held as XOR shares (Share) by the two servers. The base map is the
// caller's (BaseScan inside its own Run). Per tree and access: one read Run
// (recordCircuit) and two eviction Runs (EvictOnceFast without tracking: these trees have
// no DataORAM to keep in step).
type PosParty struct {
	sess  *twopc.Session
	r     Recursion
	trees []*posTree // trees[j-1] is T_j
}

type posTree struct {
	sh          *Share
	read, evict *circuit.Circuit
	evicts      uint64
}

// NewPosParty builds the circuits of r's trees over this party's shares (shares[j-1] of
// T_j, with evicts[j-1] evictions done so far).
func NewPosParty(sess *twopc.Session, r Recursion, shares []*Share, evicts []uint64) (*PosParty, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if len(shares) != r.Levels() || len(evicts) != r.Levels() {
		return nil, fmt.Errorf("oram: %d tree shares and %d counters for %d trees", len(shares), len(evicts), r.Levels())
	}
	p := &PosParty{sess: sess, r: r}
	for j := 1; j <= r.Levels(); j++ {
		sh := shares[j-1]
		if sh.L != r.MapLayout(j) {
			return nil, fmt.Errorf("oram: T_%d share has layout %+v, want %+v", j, sh.L, r.MapLayout(j))
		}
		rc, err := r.recordCircuit(j)
		if err != nil {
			return nil, err
		}
		ec, err := sh.L.evictCircuit(false)
		if err != nil {
			return nil, err
		}
		p.trees = append(p.trees, &posTree{sh: sh, read: rc, evict: ec, evicts: evicts[j-1]})
	}
	return p, nil
}

// NewPosShares returns the shares of r's empty trees of records.
func NewPosShares(r Recursion) ([]*Share, error) {
	var out []*Share
	for j := 1; j <= r.Levels(); j++ {
		sh, err := NewShare(r.MapLayout(j))
		if err != nil {
			return nil, err
		}
		out = append(out, sh)
	}
	return out, nil
}

// Evictions returns each tree's eviction counter (T_1 first), to persist with the shares.
func (p *PosParty) Evictions() []uint64 {
	out := make([]uint64, len(p.trees))
	for i, t := range p.trees {
		out[i] = t.evicts
	}
	return out
}

// Shares returns this party's current shares of the trees (T_1 first).
func (p *PosParty) Shares() []*Share {
	out := make([]*Share, len(p.trees))
	for i, t := range p.trees {
		out[i] = t.sh
	}
	return out
}

// FreshShare is this party's share of one access's randomness (Fresh): Leaves[j] of D_j
// bits (j = 0..Levels), Init[j-1] of MapLayout(j).ValueBits bits.
type FreshShare struct {
	Leaves, Init [][]bool
}

// DrawFresh reads this party's shares of an access's randomness from rnd.
func (r Recursion) DrawFresh(rnd io.Reader) (FreshShare, error) {
	var f FreshShare
	draw := func(n int) ([]bool, error) {
		b := make([]byte, (n+7)/8)
		if _, err := io.ReadFull(rnd, b); err != nil {
			return nil, err
		}
		return circuit.BytesToBits(b)[:n], nil
	}
	for j := 0; j <= r.Levels(); j++ {
		v, err := draw(r.Depth(j))
		if err != nil {
			return f, err
		}
		f.Leaves = append(f.Leaves, v)
	}
	for j := 1; j <= r.Levels(); j++ {
		v, err := draw(r.MapLayout(j).ValueBits)
		if err != nil {
			return f, err
		}
		f.Init = append(f.Init, v)
	}
	return f, nil
}

// Walk runs T_Levels .. T_1 for id x (this party's share, D+1 bits): leaf is x's block's
// leaf in T_Levels, revealed by the base map. Each tree's read reveals the next tree's
// leaf and writes f.Leaves of the level below; Walk returns x's leaf in T_0 (public, the
// data-level access's path), whose new leaf is f.Leaves[0]. Both parties call it with the
// same leaf.
func (p *PosParty) Walk(leaf uint64, x []bool, f FreshShare) (uint64, error) {
	r := p.r
	L := r.Levels()
	if len(x) != r.D+1 || len(f.Leaves) != L+1 || len(f.Init) != L {
		return 0, fmt.Errorf("oram: position map walk with %d id bits, %d leaves, %d inits", len(x), len(f.Leaves), len(f.Init))
	}
	for j := L; j >= 1; j-- {
		t := p.trees[j-1]
		l := t.sh.L
		if leaf >= 1<<l.D {
			return 0, fmt.Errorf("oram: T_%d leaf %d out of range", j, leaf)
		}
		in := append(append([]bool{}, t.sh.Stash...), t.sh.path(leaf)...)
		in = append(in, x[(j-1)*r.Pack:]...)
		in = append(append(in, f.Leaves[j]...), f.Leaves[j-1]...)
		in = append(in, f.Init[j-1]...)
		out, err := p.sess.Run(t.read, in)
		if err != nil {
			return 0, err
		}
		ns, np := len(t.sh.Stash), (l.D+1)*BucketSize*l.BlockBits()
		rest := out[ns+np:]
		if rest[len(rest)-1] {
			return 0, ErrStashOverflow
		}
		copy(t.sh.Stash, out[:ns])
		t.sh.setPath(leaf, out[ns:ns+np])
		leaf = circuit.BitsToUint64(rest[:r.Depth(j-1)])
		for i := 0; i < 2; i++ {
			if _, err := runEvict(p.sess, t.evict, t.sh, evictionLeaf(t.evicts, l.D)); err != nil {
				return 0, err
			}
			t.evicts++
		}
	}
	return leaf, nil
}

// runEvict runs one eviction circuit on the path to leaf and stores the new stash and
// path shares; it returns the circuit's other outputs (the tracked permutation, if any).
func runEvict(sess *twopc.Session, c *circuit.Circuit, sh *Share, leaf uint64) ([]bool, error) {
	var in []bool
	if sess.Role() == twopc.Garbler {
		in = circuit.Uint64ToBits(leaf, sh.L.D)
	}
	in = append(append(in, sh.Stash...), sh.path(leaf)...)
	out, err := sess.Run(c, in)
	if err != nil {
		return nil, err
	}
	l := sh.L
	ns, np := len(sh.Stash), (l.D+1)*BucketSize*l.BlockBits()
	copy(sh.Stash, out[:ns])
	sh.setPath(leaf, out[ns:ns+np])
	return out[ns+np:], nil
}

// CircuitCost is the AND gates and party-2 input bits (OTs) of one walk.
func (p *PosParty) CircuitCost() (ands, ots int) {
	for _, t := range p.trees {
		ands += t.read.NumAND + 2*t.evict.NumAND
		ots += t.read.In2 + 2*t.evict.In2
	}
	return ands, ots
}
