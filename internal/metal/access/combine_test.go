package access

import (
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/oram"
)

// step is one access's moves as IndexORAM reports them (oram.Trace), plus the op.
type step struct {
	from, to     int // slot read from (-1: a new block), stash slot written
	write        bool
	e1, e2       uint64
	perm1, perm2 []int // the evictions' permutations over stash + path, gather form
}

// sequential replays a step on a plain DataORAM as three permutations, in the protocol's
// order: fetch from `from`, put the entering block (the client's for a write) into stash
// slot `to`, then eviction 1, then eviction 2.
func sequential(p Params, data map[uint64]string, s step, read uint64, user string) {
	fetched := "zeros"
	if s.from >= 0 && !s.write {
		fetched = data[pathKeys(p, read)[s.from]]
	}
	if s.write {
		fetched = user
	}
	data[stashKey(s.to)] = fetched
	for _, ev := range []struct {
		leaf uint64
		perm []int
	}{{s.e1, s.perm1}, {s.e2, s.perm2}} {
		keys := pathKeys(p, ev.leaf)
		old := make([]string, len(keys))
		for j, k := range keys {
			old[j] = data[k]
		}
		for j, k := range keys {
			data[k] = old[ev.perm[j]]
		}
	}
}

// combined evaluates permCircuit in the clear on random XOR shares of the step, applies
// Server 1's random σ1 and the circuit's σ2 to the region (as permute does) and returns
// the DOT index.
func combined(t *testing.T, p Params, data map[uint64]string, s step, read uint64, user string, rng *mrand.Rand) int {
	t.Helper()
	r := newRegion(p, s.e1, s.e2)
	c, err := permCircuit(p, r.shared)
	if err != nil {
		t.Fatal(err)
	}
	n, wu, sb := r.size(), r.posBits(), p.Layout().SlotBits()
	p1 := rng.Perm(n)
	q := make([]int, n)
	for j, v := range p1 {
		q[v] = j
	}
	var in1, val []bool
	for _, v := range q {
		in1 = append(in1, circuit.Uint64ToBits(uint64(v), wu)...)
	}
	val = append(circuit.Uint64ToBits(uint64(max(s.from, 0)), sb), circuit.Uint64ToBits(uint64(s.to), sb)...)
	val = append(val, s.from >= 0, s.write, true)
	for _, perm := range [][]int{s.perm1, s.perm2} {
		for _, v := range perm {
			val = append(val, circuit.Uint64ToBits(uint64(v), sb)...)
		}
	}
	in2 := make([]bool, len(val))
	for i := range val {
		in2[i] = rng.IntN(2) == 0
		in1 = append(in1, val[i] != in2[i])
	}
	out, err := c.Eval(in1, in2)
	if err != nil {
		t.Fatal(err)
	}
	iw := dataoram.IndexBits(p.Slots() + 1)
	dot := int(circuit.BitsToUint64(out[:iw]))
	var arr []string
	for _, k := range r.keys() {
		arr = append(arr, data[k])
	}
	fetched := "zeros"
	if dot < p.Slots() {
		fetched = data[pathKeys(p, read)[dot]]
	}
	arr = append(arr, fetched, user)
	mid := make([]string, n)
	for j := range mid {
		mid[j] = arr[p1[j]]
	}
	for j, k := range r.keys() {
		data[k] = mid[circuit.BitsToUint64(out[iw+j*wu:iw+(j+1)*wu])]
	}
	return dot
}

// wrongOrder is the one permutation composed in the wrong order (evictions swapped, or
// the insert after them), applied in the clear: what the checks below must tell apart.
func wrongOrder(p Params, data map[uint64]string, s step, read uint64, user string, swapEvictions bool) {
	r := newRegion(p, s.e1, s.e2)
	n := r.size()
	ins, ev1, ev2 := identity(n), identity(n), identity(n)
	src := r.user()
	if !s.write {
		src = r.fetched()
	}
	ins[s.to], ins[r.fetched()], ins[r.user()] = src, r.fetched(), r.user()
	if s.write {
		ins[r.user()] = s.to
	} else {
		ins[r.fetched()] = s.to
	}
	for i := 0; i < p.Slots(); i++ {
		ev1[i] = s.perm1[i]
		ev2[r.second(i)] = r.second(s.perm2[i])
	}
	sigma := make([]int, n)
	for j := range sigma {
		if swapEvictions {
			sigma[j] = ins[ev2[ev1[j]]]
		} else {
			sigma[j] = ev1[ev2[ins[j]]]
		}
	}
	var arr []string
	for _, k := range r.keys() {
		arr = append(arr, data[k])
	}
	fetched := "zeros"
	if s.from >= 0 && !s.write {
		fetched = data[pathKeys(p, read)[s.from]]
	}
	arr = append(arr, fetched, user)
	for j, k := range r.keys() {
		data[k] = arr[sigma[j]]
	}
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func equalData(a, b map[uint64]string) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// The one permutation the circuit composes and splits moves DataORAM exactly as the insert
// and the two evictions applied one after the other, whatever the evictions' paths share
// (the root only, some levels, all: random leaves and permutations here); the wrong compositions
// (evictions swapped, insert last) do not, so this check would catch them.
func TestOnePermutationIsTheSequence(t *testing.T) {
	p := Params{D: 4, Stash: 8, BlockSize: 16, FilesPerAccount: 1}
	rng := mrand.New(mrand.NewPCG(5, 6))
	ref, got, swapped, late := map[uint64]string{}, map[uint64]string{}, map[uint64]string{}, map[uint64]string{}
	var differSwap, differLate int
	shared := map[int]bool{}
	for i := 0; i < 300; i++ {
		s := step{from: rng.IntN(p.Slots()+1) - 1, to: rng.IntN(p.Stash), write: rng.IntN(2) == 0,
			e1: rng.Uint64N(1 << p.D), perm1: rng.Perm(p.Slots()), perm2: rng.Perm(p.Slots())}
		s.e2 = s.e1 ^ rng.Uint64N(1<<p.D)>>rng.IntN(p.D+1) // every overlap depth
		shared[newRegion(p, s.e1, s.e2).shared] = true
		read, user := rng.Uint64N(1<<p.D), fmt.Sprintf("user%d", i)
		for _, m := range []map[uint64]string{ref, got, swapped, late} {
			copyMap(m, ref)
		}
		sequential(p, ref, s, read, user)
		dot := combined(t, p, got, s, read, user, rng)
		wantDot := p.Slots()
		if s.from >= 0 && !s.write {
			wantDot = s.from
		}
		if dot != wantDot {
			t.Fatalf("step %d: DOT index %d, want %d", i, dot, wantDot)
		}
		if !equalData(ref, got) {
			t.Fatalf("step %d (shared levels %d): the one permutation differs from the sequence", i, newRegion(p, s.e1, s.e2).shared)
		}
		wrongOrder(p, swapped, s, read, user, true)
		wrongOrder(p, late, s, read, user, false)
		if !equalData(ref, swapped) {
			differSwap++
		}
		if !equalData(ref, late) {
			differLate++
		}
	}
	if len(shared) != p.D+1 || differSwap == 0 || differLate == 0 {
		t.Fatalf("overlaps covered %v; wrong orders differed in %d and %d of 300 steps", shared, differSwap, differLate)
	}
}

// copyMap makes dst a copy of src (dst == src: no-op).
func copyMap(dst, src map[uint64]string) {
	for k := range dst {
		if _, ok := src[k]; !ok {
			delete(dst, k)
		}
	}
	for k, v := range src {
		dst[k] = v
	}
}

// The same against real IndexORAM traces (oram.Tree.AccessTracked): every access finds
// the block's current content in the DataORAM slot IndexORAM read it from.
func TestOnePermutationFollowsIndexORAM(t *testing.T) {
	p := Params{D: 4, Stash: 10, BlockSize: 16, FilesPerAccount: 1}
	tr, err := oram.NewTree(p.D, p.Stash)
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(7, 8))
	data, content, pos := map[uint64]string{}, map[uint64]string{}, map[uint64]uint64{}
	for i := 0; i < 400; i++ {
		id := rng.Uint64N(12)
		leaf, ok := pos[id]
		if !ok {
			leaf = rng.Uint64N(1 << p.D)
		}
		pos[id] = rng.Uint64N(1 << p.D)
		_, found, trace, err := tr.AccessTracked(id, leaf, pos[id], func(v uint64) uint64 { return v })
		if err != nil {
			t.Fatal(err)
		}
		s := step{from: trace.From, to: trace.To, write: rng.IntN(2) == 0, e1: trace.Evictions[0].Leaf,
			e2: trace.Evictions[1].Leaf, perm1: trace.Evictions[0].Perm, perm2: trace.Evictions[1].Perm}
		if found && data[pathKeys(p, trace.Leaf)[trace.From]] != content[id] {
			t.Fatalf("access %d: block %d's slot holds %q, want %q", i, id, data[pathKeys(p, trace.Leaf)[trace.From]], content[id])
		}
		user := fmt.Sprintf("%d@%d", id, i)
		if s.write {
			content[id] = user
		} else if !found {
			content[id] = "zeros"
		}
		combined(t, p, data, s, trace.Leaf, user, rng)
	}
}
