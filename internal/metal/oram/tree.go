package oram

import (
	"errors"
	"fmt"
)

// BucketSize is Z, blocks per tree node (paper Section 5.1: three).
const BucketSize = 3

// DefaultStash is the stash bound: the reference implementation's ~33 blocks for 2^-80
// failure probability at the paper's sizes (brief; Circuit ORAM's analysis).
const DefaultStash = 33

// ErrStashOverflow is the ORAM failure event: a block could not be kept.
var ErrStashOverflow = errors.New("oram: stash overflow")

// Block is one ORAM block.
type Block struct {
	Valid bool
	ID    uint64
	Leaf  uint64
	Value uint64
}

// Tree is a Circuit ORAM tree with its stash, in the clear.
type Tree struct {
	D       int
	buckets [][BucketSize]Block // heap order: node 1 is the root, children 2n, 2n+1
	stash   []Block
	evicts  uint64 // evictions done: the next eviction path is bitreverse(evicts mod 2^D)
	maxSeen int    // largest stash occupancy after an access
}

// NewTree returns an empty tree of depth d (2^d leaves) with a stash of stash blocks.
func NewTree(d, stash int) (*Tree, error) {
	if d < 1 || d > 40 {
		return nil, fmt.Errorf("oram: depth %d out of range 1..40", d)
	}
	if stash < 1 {
		return nil, fmt.Errorf("oram: stash of %d blocks", stash)
	}
	return &Tree{D: d, buckets: make([][BucketSize]Block, 1<<(d+1)), stash: make([]Block, stash)}, nil
}

// Leaves is the number of leaves, 2^D.
func (t *Tree) Leaves() uint64 { return 1 << t.D }

// node is the heap index of the bucket at depth d on the path to leaf.
func (t *Tree) node(leaf uint64, d int) uint64 { return 1<<d | leaf>>(t.D-d) }

// level returns level k (0 = stash, k = d+1 = depth-d bucket) of the path to leaf.
func (t *Tree) level(leaf uint64, k int) []Block {
	if k == 0 {
		return t.stash
	}
	return t.buckets[t.node(leaf, k-1)][:]
}

// deepest is the deepest level on the path to l that a block of leaf x may occupy.
func (t *Tree) deepest(x, l uint64) int {
	d := 0
	for d < t.D && x>>(t.D-d-1) == l>>(t.D-d-1) {
		d++
	}
	return d + 1
}

// Access reads and removes block id from the path to leaf (or the stash), applies update
// to its value (0 for a block never written), reinserts it with newLeaf and runs two
// evictions. It returns the old value and whether the block existed.
func (t *Tree) Access(id, leaf, newLeaf uint64, update func(uint64) uint64) (uint64, bool, error) {
	old, found, _, err := t.AccessTracked(id, leaf, newLeaf, update)
	return old, found, err
}

// AccessTracked is Access that also reports how blocks moved (paper Sections 5.5-5.6), in
// terms of slots: the slots of the stash and of one path, numbered in level order (stash
// slots 0..Stash-1, then the root bucket's 3 slots, ..., the leaf bucket's last).
func (t *Tree) AccessTracked(id, leaf, newLeaf uint64, update func(uint64) uint64) (uint64, bool, Trace, error) {
	tr := Trace{Leaf: leaf, From: -1}
	if leaf >= t.Leaves() || newLeaf >= t.Leaves() {
		return 0, false, tr, fmt.Errorf("oram: leaf out of range")
	}
	var old uint64
	found := false
	slot := 0
	for k := 0; k <= t.D+1; k++ {
		lv := t.level(leaf, k)
		for i := range lv {
			if lv[i].Valid && lv[i].ID == id {
				old, found = lv[i].Value, true
				lv[i] = Block{}
				tr.From = slot
			}
			slot++
		}
	}
	tr.To = -1
	for i := range t.stash {
		if !t.stash[i].Valid {
			t.stash[i] = Block{Valid: true, ID: id, Leaf: newLeaf, Value: update(old)}
			tr.To = i
			break
		}
	}
	if tr.To < 0 {
		return 0, false, tr, ErrStashOverflow
	}
	for i := 0; i < 2; i++ {
		l := t.nextEvictionLeaf()
		before := t.slotIDs(l)
		if err := t.evictOnce(l); err != nil {
			return 0, false, tr, err
		}
		tr.Evictions[i] = EvictionTrace{Leaf: l, Perm: trackPermutation(before, t.slotIDs(l))}
	}
	if n := t.StashLoad(); n > t.maxSeen {
		t.maxSeen = n
	}
	return old, found, tr, nil
}

// nextEvictionLeaf is the reverse-lexicographic order of Gentry et al. used by Circuit ORAM.
func (t *Tree) nextEvictionLeaf() uint64 {
	l := evictionLeaf(t.evicts, t.D)
	t.evicts++
	return l
}

// evictionLeaf is the g-th eviction path: the D-bit reversal of g mod 2^D.
func evictionLeaf(g uint64, d int) uint64 {
	g %= 1 << d
	var r uint64
	for i := 0; i < d; i++ {
		r |= (g >> uint(i) & 1) << uint(d-1-i)
	}
	return r
}

func put(lv []Block, b Block) bool {
	for i := range lv {
		if !lv[i].Valid {
			lv[i] = b
			return true
		}
	}
	return false
}

// StashLoad is the number of blocks in the stash now.
func (t *Tree) StashLoad() int {
	n := 0
	for _, b := range t.stash {
		if b.Valid {
			n++
		}
	}
	return n
}

// MaxStash is the largest stash occupancy seen after any access.
func (t *Tree) MaxStash() int { return t.maxSeen }
