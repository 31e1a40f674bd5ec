package oram

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

func sessions(t *testing.T) (*twopc.Session, *twopc.Session) { return sessionsB(t) }

func sessionsB(t testing.TB) (*twopc.Session, *twopc.Session) { return twopctest.Pair(t) }

func xorBits(a, b []bool) []bool {
	out := make([]bool, len(a))
	for i := range a {
		out[i] = a[i] != b[i]
	}
	return out
}

func splitBits(r *mrand.Rand, v []bool) ([]bool, []bool) {
	s1 := make([]bool, len(v))
	for i := range s1 {
		s1[i] = r.IntN(2) == 1
	}
	return s1, xorBits(v, s1)
}

// sameAs compares the tree held as shares with the reference, slot for slot (valid bit,
// and for valid blocks id, leaf and value).
func sameAs(t *testing.T, l Layout, s1, s2 *Share, ref *Tree) {
	t.Helper()
	cmp := func(where string, a, b []bool, want []Block) {
		got := xorBits(a, b)
		for i, w := range want {
			g := l.DecodeBlock(got[i*l.BlockBits() : (i+1)*l.BlockBits()])
			if g.Valid != w.Valid || (w.Valid && g != w) {
				t.Fatalf("%s slot %d: shares hold %+v, reference %+v", where, i, g, w)
			}
		}
	}
	cmp("stash", s1.Stash, s2.Stash, ref.stash)
	for n := 1; n < len(ref.buckets); n++ {
		cmp("bucket", s1.Buckets[n], s2.Buckets[n], ref.buckets[n][:])
	}
}

// IndexORAM's circuits over XOR-shared state, two parties over loopback TCP, against the
// plain reference: same ids, same leaves, the same tree slot for slot after every access.
func TestSharedTreeMatchesReference(t *testing.T) {
	sharedVsReference(t, Layout{D: 4, Stash: 6, IDBits: 6, ValueBits: 8}, 20, 40)
	// Overloaded (42 blocks in 15 buckets of 3): the stash fills and every eviction branch
	// runs inside 2PC.
	ref := sharedVsReference(t, Layout{D: 3, Stash: 12, IDBits: 6, ValueBits: 8}, 42, 150)
	t.Logf("overloaded tree: max stash %d", ref.MaxStash())
	if ref.MaxStash() < 2 {
		t.Fatalf("overloaded tree used %d stash slots: the test exercises too little", ref.MaxStash())
	}
}

func sharedVsReference(t *testing.T, l Layout, ids, accesses int) *Tree {
	g, e := sessions(t)
	sh1, _ := NewShare(l)
	sh2, _ := NewShare(l)
	// Deterministic party randomness (the new leaves' shares), so the run is reproducible.
	p1, err := NewParty(g, sh1, mrand.NewChaCha8([32]byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := NewParty(e, sh2, mrand.NewChaCha8([32]byte{2}))
	sp1, err := NewSplitter(g, l.Slots(), l.SlotBits(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp2, _ := NewSplitter(e, l.Slots(), l.SlotBits(), rand.Reader)
	t.Logf("read circuit %d AND, evict circuit %d AND", p1.read.NumAND, p1.evict.NumAND)
	ref, _ := NewTree(l.D, l.Stash)
	r := mrand.New(mrand.NewPCG(7, 7))
	pos := map[uint64]uint64{}
	vals := map[uint64]uint64{}
	for i := 0; i < accesses; i++ {
		id := uint64(r.IntN(ids))
		leaf, ok := pos[id]
		if !ok {
			leaf = r.Uint64N(1 << l.D)
		}
		write := r.IntN(2) == 0
		v := uint64(r.IntN(256))
		id1, id2 := splitBits(r, circuit.Uint64ToBits(id, l.IDBits))
		v1, v2 := splitBits(r, circuit.Uint64ToBits(v, l.ValueBits))
		w1 := r.IntN(2) == 1
		w2 := w1 != write
		var res2 AccessResult
		var err2 error
		done := make(chan struct{})
		go func() {
			res2, err2 = p2.Access(leaf, id2, w2, v2)
			close(done)
		}()
		res1, err1 := p1.Access(leaf, id1, w1, v1)
		<-done
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		old := circuit.BitsToUint64(xorBits(res1.Old, res2.Old))
		found := res1.Found != res2.Found
		newLeaf := circuit.BitsToUint64(xorBits(res1.NewLeaf, res2.NewLeaf))
		if found != ok || old != vals[id] {
			t.Fatalf("access %d to %d: got (%d, %v), want (%d, %v)", i, id, old, found, vals[id], ok)
		}
		rold, _, trace, err := ref.AccessTracked(id, leaf, newLeaf, func(o uint64) uint64 {
			if write {
				return v
			}
			return o
		})
		if err != nil || rold != old {
			t.Fatalf("reference: %v, old %d", err, rold)
		}
		if got := circuit.BitsToUint64(xorBits(res1.To, res2.To)); got != uint64(trace.To) {
			t.Fatalf("access %d: inserted at stash slot %d, reference %d", i, got, trace.To)
		}
		if got := circuit.BitsToUint64(xorBits(res1.From, res2.From)); found && got != uint64(trace.From) {
			t.Fatalf("access %d: read from slot %d, reference %d", i, got, trace.From)
		}
		for k, ev := range trace.Evictions {
			e1, e2 := res1.Evictions[k], res2.Evictions[k]
			if e1.Leaf != ev.Leaf || e2.Leaf != ev.Leaf || len(e1.Perm) != len(ev.Perm) {
				t.Fatalf("access %d eviction %d: leaf %d/%d, reference %d", i, k, e1.Leaf, e2.Leaf, ev.Leaf)
			}
			for j := range ev.Perm {
				if got := circuit.BitsToUint64(xorBits(e1.Perm[j], e2.Perm[j])); got != uint64(ev.Perm[j]) {
					t.Fatalf("access %d eviction %d slot %d: 2PC permutation says %d, reference %d", i, k, j, got, ev.Perm[j])
				}
			}
			if k == 0 || i%5 == 0 { // the split is slow-ish: not every eviction
				checkSplit(t, sp1, sp2, e1.Perm, e2.Perm, ev.Perm)
			}
		}
		if write {
			vals[id] = v
		}
		pos[id] = newLeaf
		sameAs(t, l, sh1, sh2, ref)
	}
	return ref
}

// checkSplit: Server 1 applies p1, then Server 2 applies p2, and the result is the
// eviction's permutation (Section 5.5).
func checkSplit(t *testing.T, sp1, sp2 *Splitter, s1, s2 [][]bool, want []int) {
	t.Helper()
	var p2 []int
	var err2 error
	done := make(chan struct{})
	go func() {
		p2, err2 = sp2.Split(s2)
		close(done)
	}()
	p1, err1 := sp1.Split(s1)
	<-done
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !isPermutation(p1, len(want)) || !isPermutation(p2, len(want)) {
		t.Fatalf("halves are not permutations: %v / %v", p1, p2)
	}
	for j := range want {
		if p1[p2[j]] != want[j] {
			t.Fatalf("p1 after p2 at %d: %d, want %d", j, p1[p2[j]], want[j])
		}
	}
}
