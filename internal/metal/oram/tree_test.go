package oram

import (
	"math/rand/v2"
	"testing"
)

// checkInvariants: every valid block sits on the path to its own leaf, and no id is stored
// twice.
func checkInvariants(t *testing.T, tr *Tree) {
	t.Helper()
	seen := map[uint64]bool{}
	for n := 1; n < len(tr.buckets); n++ {
		depth := 0
		for 1<<(depth+1) <= n {
			depth++
		}
		for _, b := range tr.buckets[n] {
			if !b.Valid {
				continue
			}
			if tr.node(b.Leaf, depth) != uint64(n) {
				t.Fatalf("block %d (leaf %d) in node %d, off its path", b.ID, b.Leaf, n)
			}
			if seen[b.ID] {
				t.Fatalf("block %d stored twice", b.ID)
			}
			seen[b.ID] = true
		}
	}
	for _, b := range tr.stash {
		if b.Valid {
			if seen[b.ID] {
				t.Fatalf("block %d stored twice", b.ID)
			}
			seen[b.ID] = true
		}
	}
}

// Random reads and writes against a plain map, with the tree's invariants checked as it
// goes: at the paper's load (N blocks, 2^ceil(log N) leaves) and overloaded (so that the
// stash and every eviction branch are exercised).
func TestAgainstMap(t *testing.T) {
	testAgainstMap(t, 8, 256, 0)
	tr := testAgainstMap(t, 5, 150, 1) // 150 blocks in 63 buckets x 3 = 189 slots
	if tr.MaxStash() == 0 {
		t.Fatal("overloaded tree never used its stash: the test exercises nothing")
	}
	t.Logf("overloaded tree: max stash %d", tr.MaxStash())
}

func testAgainstMap(t *testing.T, d, n int, seed uint64) *Tree {
	tr, err := NewTree(d, DefaultStash)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, seed))
	pos := map[uint64]uint64{}
	ref := map[uint64]uint64{}
	for i := 0; i < 20000; i++ {
		id := uint64(r.IntN(n))
		leaf, ok := pos[id]
		if !ok {
			leaf = r.Uint64N(tr.Leaves())
		}
		newLeaf := r.Uint64N(tr.Leaves())
		write := r.IntN(2) == 0
		v := r.Uint64()
		old, found, err := tr.Access(id, leaf, newLeaf, func(o uint64) uint64 {
			if write {
				return v
			}
			return o
		})
		if err != nil {
			t.Fatal(err)
		}
		if found != ok || old != ref[id] {
			t.Fatalf("access %d to %d: got (%d, %v), want (%d, %v)", i, id, old, found, ref[id], ok)
		}
		pos[id] = newLeaf
		if write {
			ref[id] = v
		}
		if i%500 == 0 {
			checkInvariants(t, tr)
		}
	}
	checkInvariants(t, tr)
	return tr
}

// The stash never exceeds its bound over 10^5 accesses (N = 2^10 blocks, full tree),
// under uniformly random and under sequential access.
func TestStashBound(t *testing.T) {
	if testing.Short() {
		t.Skip("10^5 accesses")
	}
	const d = 10
	for _, pattern := range []string{"random", "sequential"} {
		tr, _ := NewTree(d, DefaultStash)
		r := rand.New(rand.NewPCG(3, 4))
		n := tr.Leaves()
		pos := make([]uint64, n)
		for i := range pos {
			pos[i] = r.Uint64N(n)
		}
		for i := 0; i < 100000; i++ {
			id := uint64(i) % n
			if pattern == "random" {
				id = r.Uint64N(n)
			}
			nl := r.Uint64N(n)
			if _, _, err := tr.Access(id, pos[id], nl, func(v uint64) uint64 { return v + 1 }); err != nil {
				t.Fatalf("%s access %d: %v", pattern, i, err)
			}
			pos[id] = nl
		}
		checkInvariants(t, tr)
		t.Logf("%s: max stash occupancy %d (bound %d) after 10^5 accesses, N = %d", pattern, tr.MaxStash(), DefaultStash, n)
		if tr.MaxStash() > DefaultStash {
			t.Fatalf("stash exceeded its bound")
		}
	}
}

func TestEvictionOrder(t *testing.T) {
	tr, _ := NewTree(3, 4)
	var got []uint64
	for i := 0; i < 8; i++ {
		got = append(got, tr.nextEvictionLeaf())
	}
	want := []uint64{0, 4, 2, 6, 1, 5, 3, 7}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("eviction order %v, want %v", got, want)
		}
	}
}

func TestBadParameters(t *testing.T) {
	if _, err := NewTree(0, 10); err == nil {
		t.Fatal("depth 0 accepted")
	}
	if _, err := NewTree(5, 0); err == nil {
		t.Fatal("empty stash accepted")
	}
	tr, _ := NewTree(3, 4)
	if _, _, err := tr.Access(1, 8, 0, func(v uint64) uint64 { return v }); err == nil {
		t.Fatal("leaf out of range accepted")
	}
}

// A stash too small for the load fails with ErrStashOverflow, not silently.
func TestOverflowReported(t *testing.T) {
	tr, _ := NewTree(1, 1) // 2 leaves, 3 buckets of 3 = 9 slots + 1
	var err error
	for id := uint64(0); id < 20 && err == nil; id++ {
		_, _, err = tr.Access(id, 0, 0, func(v uint64) uint64 { return v })
	}
	if err != ErrStashOverflow {
		t.Fatalf("got %v, want ErrStashOverflow", err)
	}
}
