package oram

import "fmt"

// Recursion is the shape of IndexORAM's recursive position map (paper Section 5.3, "the
// recursive technique [SCSL11; SSS12; SDS+13]"; Appendix "Deamortizing IndexORAM's
// initialization"). Tree T_0 is the data-level tree: depth D, ids 0..2^D (the last one a
// dummy). Tree T_j (j = 1..Levels()) has depth D_j = D - j·Pack and holds record blocks:
// record y packs the T_{j-1} leaves of ids y·2^Pack .. y·2^Pack + 2^Pack - 1, 2^Pack
// entries of D_{j-1} bits. The base map, scanned linearly, holds the T_Levels leaves of
// ids 0..2^D_Levels, one entry each. With D <= Base there is no tree of records and the
// base map is the whole position map.
//
// An access to id x walks the base map, then T_Levels down to T_1, each step revealing the
// leaf of x>>(j·Pack) in T_j (uniformly random: it was drawn fresh when that block was last
// accessed, or when its record was created) and writing that block's fresh leaf in its
// place, then T_0.
type Recursion struct {
	D     int // data-level depth: 2^D leaves, ids 0..2^D
	Pack  int // log2 of the leaves one record block packs
	Base  int // the largest depth whose map is a linear scan
	Stash int // stash bound of every tree
}

// Check validates r.
func (r Recursion) Check() error {
	if r.D < 1 || r.D > 40 || r.Pack < 1 || r.Pack > 8 || r.Base < r.Pack || r.Base > 20 || r.Stash < 1 {
		return fmt.Errorf("oram: bad recursion %+v (want 1 <= Pack <= Base <= 20, Pack <= 8)", r)
	}
	return nil
}

// Levels is the number of trees of records, L: the smallest L with D - L·Pack <= Base.
func (r Recursion) Levels() int {
	l := 0
	for r.D-l*r.Pack > r.Base {
		l++
	}
	return l
}

// Depth is D_j, the depth of T_j.
func (r Recursion) Depth(j int) int { return r.D - j*r.Pack }

// Entries is the number of leaves per record block, 2^Pack.
func (r Recursion) Entries() int { return 1 << r.Pack }

// MapLayout is T_j's layout (j >= 1): ids of D_j+1 bits (the dummy's ancestors included),
// values of 2^Pack leaves of D_{j-1} bits, entry k in bits k·D_{j-1} .. (k+1)·D_{j-1}-1.
func (r Recursion) MapLayout(j int) Layout {
	return Layout{D: r.Depth(j), Stash: r.Stash, IDBits: r.Depth(j) + 1, ValueBits: r.Depth(j-1) << r.Pack}
}

// BaseEntries is the size of the base map: the ids of T_Levels, 2^D_Levels + 1.
func (r Recursion) BaseEntries() int { return 1<<r.Depth(r.Levels()) + 1 }

// BaseBits is the width of a base map entry, D_Levels.
func (r Recursion) BaseBits() int { return r.Depth(r.Levels()) }

// PosMap is the recursive position map in the clear: the reference for the 2PC form
// (PosParty) and the fast in-memory mode. Trees[j-1] is T_j; a tree carries the placement
// of record blocks (the reference Tree's algorithm), Records[j-1][y] the leaves record y
// holds (in the clear a value travels with its id, so only placement needs the tree).
type PosMap struct {
	R       Recursion
	Base    []uint64
	Trees   []*Tree
	Records []map[uint64][]uint64
}

// NewPosMap returns the position map with the given base map (BaseEntries leaves of
// T_Levels, drawn uniformly at random by the caller) and empty trees of records.
func NewPosMap(r Recursion, base []uint64) (*PosMap, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	if len(base) != r.BaseEntries() {
		return nil, fmt.Errorf("oram: base map of %d entries, want %d", len(base), r.BaseEntries())
	}
	m := &PosMap{R: r, Base: append([]uint64{}, base...)}
	for j := 1; j <= r.Levels(); j++ {
		t, err := NewTree(r.Depth(j), r.Stash)
		if err != nil {
			return nil, err
		}
		m.Trees = append(m.Trees, t)
		m.Records = append(m.Records, map[uint64][]uint64{})
	}
	return m, nil
}

// Fresh is the randomness of one access: Leaves[j] is the new leaf of x>>(j·Pack) in T_j
// (j = 0..Levels), Init[j-1] the leaves a record of T_j gets when it is created (2^Pack
// entries of D_{j-1} bits), used only if that record did not exist.
type Fresh struct {
	Leaves []uint64
	Init   [][]uint64
}

// Access returns the current T_0 leaf of id x and records Leaves[0] as its new one, giving
// every record block on the way its new leaf. Leaves[] (j = 0..Levels) returns the leaf
// each level revealed: index j is the old leaf of x>>(j·Pack) in T_j.
func (m *PosMap) Access(x uint64, f Fresh) ([]uint64, error) {
	r := m.R
	L := r.Levels()
	if x > 1<<r.D || len(f.Leaves) != L+1 || len(f.Init) != L {
		return nil, fmt.Errorf("oram: position map access to %d with %d leaves, %d inits", x, len(f.Leaves), len(f.Init))
	}
	seen := make([]uint64, L+1)
	top := x >> (L * r.Pack)
	seen[L], m.Base[top] = m.Base[top], f.Leaves[L]
	for j := L; j >= 1; j-- {
		y := x >> (j * r.Pack)
		k := x >> ((j - 1) * r.Pack) & uint64(r.Entries()-1)
		rec, ok := m.Records[j-1][y]
		if !ok {
			rec = append([]uint64{}, f.Init[j-1]...)
		}
		seen[j-1] = rec[k]
		rec[k] = f.Leaves[j-1]
		m.Records[j-1][y] = rec
		if _, _, err := m.Trees[j-1].Access(y, seen[j], f.Leaves[j], func(uint64) uint64 { return 0 }); err != nil {
			return nil, err
		}
	}
	return seen, nil
}
