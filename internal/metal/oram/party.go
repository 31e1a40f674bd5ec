package oram

import (
	"fmt"
	"io"
	"slices"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Share is one server's XOR share of a whole tree: its stash and every bucket (heap order,
// node 1 the root), as bits in the Layout's encoding. Two all-zero shares are the empty
// tree.
type Share struct {
	L       Layout
	Stash   []bool
	Buckets [][]bool
	touched map[uint64]bool // nodes written since TakeTouched; 0 is the stash
}

// TakeTouched returns the nodes an access wrote since the last call, in increasing order
// (0 for the stash, n >= 1 for heap node n), and forgets them: what a caller persisting
// the share per node must write.
func (s *Share) TakeTouched() []uint64 {
	out := make([]uint64, 0, len(s.touched))
	for n := range s.touched {
		out = append(out, n)
	}
	slices.Sort(out)
	s.touched = nil
	return out
}

// Node returns the share of node n (0: the stash), the slice itself.
func (s *Share) Node(n uint64) []bool {
	if n == 0 {
		return s.Stash
	}
	return s.Buckets[n]
}

// NewShare returns the share of an empty tree.
func NewShare(l Layout) (*Share, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	s := &Share{L: l, Stash: make([]bool, l.Stash*l.BlockBits()), Buckets: make([][]bool, 1<<(l.D+1))}
	for i := 1; i < len(s.Buckets); i++ {
		s.Buckets[i] = make([]bool, BucketSize*l.BlockBits())
	}
	return s, nil
}

func (s *Share) path(leaf uint64) []bool {
	var p []bool
	for d := 0; d <= s.L.D; d++ {
		p = append(p, s.Buckets[1<<d|leaf>>(s.L.D-d)]...)
	}
	return p
}

func (s *Share) setPath(leaf uint64, p []bool) {
	n := BucketSize * s.L.BlockBits()
	if s.touched == nil {
		s.touched = map[uint64]bool{}
	}
	s.touched[0] = true
	for d := 0; d <= s.L.D; d++ {
		node := uint64(1)<<d | leaf>>(s.L.D-d)
		copy(s.Buckets[node], p[d*n:(d+1)*n])
		s.touched[node] = true
	}
}

// Party runs accesses on one tree held as XOR shares by the two servers. Both servers call
// Access with the same public leaf and their own shares, in the same order.
type Party struct {
	sess        *twopc.Session
	sh          *Share
	read, evict *circuit.Circuit
	rnd         io.Reader
	evicts      uint64
}

// NewParty builds the layout's circuits. rnd supplies this party's share of each new leaf.
func NewParty(sess *twopc.Session, sh *Share, rnd io.Reader) (*Party, error) {
	r, err := sh.L.readCircuit()
	if err != nil {
		return nil, err
	}
	e, err := sh.L.evictCircuit(true)
	if err != nil {
		return nil, err
	}
	return &Party{sess: sess, sh: sh, read: r, evict: e, rnd: rnd}, nil
}

// Evictions is the number of evictions run so far: it fixes the next eviction paths (reverse
// lexicographic order) and must be persisted with the share.
func (p *Party) Evictions() uint64 { return p.evicts }

// NextEvictionLeaves are the paths of the next access's two evictions: public, they follow
// from the eviction counter alone (reverse-lexicographic order), so DataORAM work on them
// can start before the access's Runs.
func (p *Party) NextEvictionLeaves() [2]uint64 {
	return [2]uint64{evictionLeaf(p.evicts, p.sh.L.D), evictionLeaf(p.evicts+1, p.sh.L.D)}
}

// SetEvictions restores the eviction counter of a persisted tree.
func (p *Party) SetEvictions(n uint64) { p.evicts = n }

// Share returns this party's current share of the tree.
func (p *Party) Share() *Share { return p.sh }

// AccessResult is this party's share of an access's outputs.
type AccessResult struct {
	Old     []bool // share of the block's previous value
	Found   bool   // share of "the block existed"
	NewLeaf []bool // share of the leaf the block now belongs to
	From    []bool // share of the stash+path slot the block was read from (if found)
	To      []bool // share of the stash slot it was re-inserted into
	// Evictions are the two evictions' paths (public) and shares of their permutations
	// (Section 5.6): one number per stash+path slot, see EvictionTrace.
	Evictions [2]EvictionShare
}

// EvictionShare is one eviction: its public leaf and this party's shares of the
// permutation's Slots() numbers (slotBits bits each, little-endian).
type EvictionShare struct {
	Leaf uint64
	Perm [][]bool
}

// Access reads block id on the path to the public leaf (and the stash), replaces its value
// by value if write, gives it a fresh random leaf, and runs the two evictions. id, write and
// value are this party's shares.
func (p *Party) Access(leaf uint64, id []bool, write bool, value []bool) (AccessResult, error) {
	rl := make([]byte, 8)
	if _, err := io.ReadFull(p.rnd, rl); err != nil {
		return AccessResult{}, err
	}
	return p.AccessLeaf(leaf, circuit.BytesToBits(rl)[:p.sh.L.D], id, write, value)
}

// AccessLeaf is Access with this party's share of the block's new leaf given by the caller
// (a position map computed inside 2PC draws it and records it before the access).
func (p *Party) AccessLeaf(leaf uint64, newLeaf, id []bool, write bool, value []bool) (AccessResult, error) {
	l := p.sh.L
	if leaf >= 1<<l.D || len(newLeaf) != l.D || len(id) != l.IDBits || len(value) != l.ValueBits {
		return AccessResult{}, fmt.Errorf("oram: access with leaf %d, %d new-leaf bits, %d id bits, %d value bits", leaf, len(newLeaf), len(id), len(value))
	}
	in := append(append([]bool{}, p.sh.Stash...), p.sh.path(leaf)...)
	in = append(append(in, id...), newLeaf...)
	in = append(append(in, write), value...)
	out, err := p.sess.Run(p.read, in)
	if err != nil {
		return AccessResult{}, err
	}
	ns, np := l.Stash*l.BlockBits(), (l.D+1)*BucketSize*l.BlockBits()
	rest := out[ns+np:]
	if rest[len(rest)-1] {
		return AccessResult{}, ErrStashOverflow
	}
	copy(p.sh.Stash, out[:ns])
	p.sh.setPath(leaf, out[ns:ns+np])
	w := l.SlotBits()
	k := l.ValueBits + 1 + l.D
	res := AccessResult{Old: rest[:l.ValueBits], Found: rest[l.ValueBits], NewLeaf: rest[l.ValueBits+1 : k],
		From: rest[k : k+w], To: rest[k+w : k+2*w]}
	for i := 0; i < 2; i++ {
		leaf := evictionLeaf(p.evicts, l.D)
		perm, err := p.evictOnce(leaf)
		if err != nil {
			return AccessResult{}, err
		}
		res.Evictions[i] = EvictionShare{Leaf: leaf, Perm: perm}
		p.evicts++
	}
	return res, nil
}

func (p *Party) evictOnce(leaf uint64) ([][]bool, error) {
	rest, err := runEvict(p.sess, p.evict, p.sh, leaf)
	if err != nil {
		return nil, err
	}
	w := p.sh.L.SlotBits()
	perm := make([][]bool, p.sh.L.Slots())
	for j := range perm {
		perm[j] = rest[j*w : (j+1)*w]
	}
	return perm, nil
}
