package oram

import (
	"math"
	"math/rand/v2"
	"testing"
)

func drawFresh(r *rand.Rand, rc Recursion) Fresh {
	L := rc.Levels()
	f := Fresh{Leaves: make([]uint64, L+1), Init: make([][]uint64, L)}
	for j := 0; j <= L; j++ {
		f.Leaves[j] = r.Uint64N(1 << rc.Depth(j))
	}
	for j := 1; j <= L; j++ {
		f.Init[j-1] = make([]uint64, rc.Entries())
		for k := range f.Init[j-1] {
			f.Init[j-1][k] = r.Uint64N(1 << rc.Depth(j-1))
		}
	}
	return f
}

func TestRecursionShape(t *testing.T) {
	for _, c := range []struct {
		r      Recursion
		levels int
		base   int
	}{
		{Recursion{D: 3, Pack: 3, Base: 8, Stash: 6}, 0, 9},
		{Recursion{D: 16, Pack: 3, Base: 8, Stash: 33}, 3, 1<<7 + 1},
		{Recursion{D: 20, Pack: 4, Base: 10, Stash: 33}, 3, 1<<8 + 1},
		{Recursion{D: 10, Pack: 2, Base: 3, Stash: 8}, 4, 5},
	} {
		if got := c.r.Levels(); got != c.levels {
			t.Errorf("%+v: %d levels, want %d", c.r, got, c.levels)
		}
		if got := c.r.BaseEntries(); got != c.base {
			t.Errorf("%+v: base of %d entries, want %d", c.r, got, c.base)
		}
	}
	if l := (Recursion{D: 16, Pack: 3, Base: 8, Stash: 33}).MapLayout(1); l.D != 13 || l.IDBits != 14 || l.ValueBits != 128 {
		t.Fatalf("T_1 layout %+v", l)
	}
	for _, bad := range []Recursion{{D: 10, Pack: 4, Base: 3, Stash: 8}, {D: 10, Pack: 0, Base: 3, Stash: 8}, {D: 0, Pack: 1, Base: 3, Stash: 8}} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// The position map in the clear against plain maps, with four trees of records: every
// level reveals the leaf its block was last given (or, for a block never accessed, the
// leaf its record was created with), the data-level tree finds its blocks there, and every
// tree keeps its invariants and its stash bound.
func TestPosMapAgainstMap(t *testing.T) {
	rc := Recursion{D: 10, Pack: 2, Base: 3, Stash: DefaultStash}
	r := rand.New(rand.NewPCG(5, 6))
	L := rc.Levels()
	base := make([]uint64, rc.BaseEntries())
	for i := range base {
		base[i] = r.Uint64N(1 << rc.Depth(L))
	}
	m, err := NewPosMap(rc, base)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := NewTree(rc.D, rc.Stash)
	// want[j][y]: the leaf block y of T_j must be revealed at next; known only after the
	// block's first access or its record's creation.
	want := make([]map[uint64]uint64, L+1)
	for j := range want {
		want[j] = map[uint64]uint64{}
	}
	for y, l := range base {
		want[L][uint64(y)] = l
	}
	vals := map[uint64]uint64{}
	for i := 0; i < 20000; i++ {
		x := r.Uint64N(1<<rc.D + 1)
		f := drawFresh(r, rc)
		seen, err := m.Access(x, f)
		if err != nil {
			t.Fatal(err)
		}
		for j := L; j >= 0; j-- {
			y := x >> (j * rc.Pack)
			if w, ok := want[j][y]; ok && seen[j] != w {
				t.Fatalf("access %d to %d: level %d revealed %d for block %d, want %d", i, x, j, seen[j], y, w)
			} else if !ok {
				t.Fatalf("access %d to %d: level %d block %d has no leaf on record", i, x, j, y)
			}
			want[j][y] = f.Leaves[j]
			if j >= 1 {
				// A record created now takes its Init entries: those are the siblings' leaves.
				for k := uint64(0); k < uint64(rc.Entries()); k++ {
					c := y<<rc.Pack | k
					if _, ok := want[j-1][c]; !ok {
						want[j-1][c] = f.Init[j-1][k]
					}
				}
			}
		}
		v := r.Uint64()
		old, found, err := data.Access(x, seen[0], f.Leaves[0], func(uint64) uint64 { return v })
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := vals[x]; found != ok || old != w {
			t.Fatalf("access %d to %d: data tree gave (%d, %v), want (%d, %v)", i, x, old, found, w, ok)
		}
		vals[x] = v
	}
	for j, tr := range m.Trees {
		checkInvariants(t, tr)
		t.Logf("T_%d (depth %d, %d records): max stash %d", j+1, tr.D, len(m.Records[j]), tr.MaxStash())
		if tr.MaxStash() > rc.Stash {
			t.Fatalf("T_%d stash above its bound", j+1)
		}
	}
	checkInvariants(t, data)
}

func TestPosMapBadInput(t *testing.T) {
	rc := Recursion{D: 6, Pack: 2, Base: 2, Stash: 8}
	if _, err := NewPosMap(rc, make([]uint64, 3)); err == nil {
		t.Fatal("short base map accepted")
	}
	m, _ := NewPosMap(rc, make([]uint64, rc.BaseEntries()))
	r := rand.New(rand.NewPCG(1, 1))
	if _, err := m.Access(1<<6+1, drawFresh(r, rc)); err == nil {
		t.Fatal("id past the dummy accepted")
	}
	if _, err := m.Access(3, Fresh{}); err == nil {
		t.Fatal("missing randomness accepted")
	}
}

// Every level of the walk reveals uniformly random leaves whatever the sequence of ids
// (one id over and over, or a sweep of all ids): chi-square against uniform per level at
// p = 10^-6 (the in-the-clear counterpart of the 2PC walk, which reveals the same leaves,
// TestPosPartyMatchesReference).
func TestPosMapLeavesUniform(t *testing.T) {
	rc := Recursion{D: 6, Pack: 2, Base: 2, Stash: DefaultStash}
	L := rc.Levels()
	for _, seq := range []struct {
		name string
		next func(i int) uint64
	}{
		{"one id", func(int) uint64 { return 5 }},
		{"all ids", func(i int) uint64 { return uint64(i) % (1<<rc.D + 1) }},
	} {
		r := rand.New(rand.NewPCG(11, 12))
		base := make([]uint64, rc.BaseEntries())
		for i := range base {
			base[i] = r.Uint64N(1 << rc.BaseBits())
		}
		m, _ := NewPosMap(rc, base)
		hist := make([][]int, L+1)
		for j := range hist {
			hist[j] = make([]int, 1<<rc.Depth(j))
		}
		const accesses = 4000
		for i := 0; i < accesses; i++ {
			seen, err := m.Access(seq.next(i), drawFresh(r, rc))
			if err != nil {
				t.Fatal(err)
			}
			for j, l := range seen {
				hist[j][l]++
			}
		}
		for j, h := range hist {
			df := float64(len(h) - 1)
			exp := float64(accesses) / float64(len(h))
			chi := 0.0
			for _, n := range h {
				chi += (float64(n) - exp) * (float64(n) - exp) / exp
			}
			// Wilson-Hilferty: the chi-square quantile at 1 - 10^-6 (z = 4.75).
			q := 2 / (9 * df)
			limit := df * math.Pow(1-q+4.75*math.Sqrt(q), 3)
			t.Logf("%s, T_%d: chi-square %.1f over %d leaves (limit %.1f)", seq.name, j, chi, len(h), limit)
			if chi > limit {
				t.Fatalf("%s, T_%d: leaf histogram %v, chi-square %.1f > %.1f", seq.name, j, h, chi, limit)
			}
		}
	}
}

// The trees of records keep the stash bound too: 10^5 accesses to a position map of 2^13
// ids (records of 8 leaves; trees of depth 10, 7 and 4 over a base map of 2^4+1 entries),
// uniformly random and sequential ids; an overflow would fail the access.
func TestPosMapStashBound(t *testing.T) {
	if testing.Short() {
		t.Skip("10^5 accesses")
	}
	rc := Recursion{D: 13, Pack: 3, Base: 4, Stash: DefaultStash}
	for _, pattern := range []string{"random", "sequential"} {
		r := rand.New(rand.NewPCG(21, 22))
		base := make([]uint64, rc.BaseEntries())
		for i := range base {
			base[i] = r.Uint64N(1 << rc.BaseBits())
		}
		m, _ := NewPosMap(rc, base)
		for i := 0; i < 100000; i++ {
			x := uint64(i) % (1<<rc.D + 1)
			if pattern == "random" {
				x = r.Uint64N(1<<rc.D + 1)
			}
			if _, err := m.Access(x, drawFresh(r, rc)); err != nil {
				t.Fatalf("%s access %d: %v", pattern, i, err)
			}
		}
		for j, tr := range m.Trees {
			checkInvariants(t, tr)
			t.Logf("%s: T_%d (depth %d, %d records) max stash %d (bound %d)", pattern, j+1, tr.D, len(m.Records[j]), tr.MaxStash(), rc.Stash)
			if tr.MaxStash() > rc.Stash {
				t.Fatalf("T_%d stash above its bound", j+1)
			}
		}
	}
}
