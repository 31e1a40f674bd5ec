package access

import (
	"math/bits"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/oram"
)

// One distributed permutation per access (paper Sections 5.5-5.6, as its implementation
// does): the insert and the two evictions depend only on IndexORAM metadata, which the
// IndexORAM Runs output XOR-shared, so one Run composes them into a single permutation over
// a region and splits it; DataORAM then applies it once.

// region is the gather domain of an access's permutation. Positions, in order: the stash,
// the slots of the first eviction's path (oram's slot order, so slot i of that eviction is
// position i), the slots of the second eviction's path below the levels it shares with the
// first (the overlap is public: both leaves are), then the fetched block (size()-2) and the
// client's block (size()-1). The read path is not in it: the read leaves DataORAM's path
// as it was (the fetched copy enters the stash through the insert).
type region struct {
	p      Params
	e1, e2 uint64
	shared int // levels, from the root, the two eviction paths have in common
}

func newRegion(p Params, e1, e2 uint64) region {
	c := 0
	for c <= p.D && e1>>(p.D-c) == e2>>(p.D-c) {
		c++
	}
	return region{p: p, e1: e1, e2: e2, shared: c}
}

func (r region) size() int    { return r.p.Slots() + (r.p.D+1-r.shared)*oram.BucketSize + 2 }
func (r region) kept() int    { return r.size() - 2 } // positions written back to DataORAM
func (r region) fetched() int { return r.size() - 2 }
func (r region) user() int    { return r.size() - 1 }
func (r region) split2() int  { return r.p.Stash + r.shared*oram.BucketSize }
func (r region) posBits() int { return bits.Len(uint(r.size() - 1)) }

// second is the position of slot i of the second eviction's stash+path.
func (r region) second(i int) int {
	if i < r.split2() {
		return i
	}
	return i - r.split2() + r.p.Slots()
}

// keys lists the DataORAM slots of positions 0 .. kept()-1.
func (r region) keys() []uint64 {
	k2 := pathKeys(r.p, r.e2)
	return append(pathKeys(r.p, r.e1), k2[r.split2():]...)
}

// permCircuit is an access's Run after the IndexORAM access, for regions whose eviction
// paths share `shared` levels. Inputs: Party 1: q = σ1⁻¹ (size() positions of posBits()
// bits, σ1 drawn by Server 1 as in oram.Splitter); XOR-shared: from, to (oram slot numbers,
// SlotBits), found, write, allowed, then the two evictions' permutations (Slots() numbers
// of SlotBits each). Outputs:
//
//	Shared  DOT index (IndexBits(Slots+1)): from, or the dummy Slots for a write, a
//	        refusal or a new file
//	Party2  σ2[j] = q[σ[j]] for j < kept(), posBits() bits each
//
// σ is the access's permutation in gather form (after it, position j holds what position
// σ[j] held): the insert, then eviction 1, then eviction 2, so σ[j] = ins[ev1[ev2[j]]],
// where ins puts the fetched block (read) or the client's (write) into stash slot `to` and
// the slot's old content at the dropped position, and each eviction is the identity off its
// stash+path. Server 1 applies σ1, Server 2 σ2 (keeping the first kept() positions), which
// is σ: A[σ1[σ2[j]]] = A[σ[j]].
func permCircuit(p Params, shared int) (*circuit.Circuit, error) {
	r := region{p: p, shared: shared}
	n, wu, sb, slots := r.size(), r.posBits(), p.Layout().SlotBits(), p.Slots()
	b := circuit.NewBuilder()
	q := words(b.Input(1, n*wu), wu)
	from, to := b.SharedInput(sb), b.SharedInput(sb)
	flags := b.SharedInput(3)
	found, write, allowed := flags[0], flags[1], flags[2]
	ev1 := words(b.SharedInput(slots*sb), sb)
	ev2 := words(b.SharedInput(slots*sb), sb)

	iw := dataoram.IndexBits(slots + 1)
	dummy := b.Or(write, b.Or(b.Not(found), b.Not(allowed)))
	b.Output(circuit.Shared, b.Mux(dummy, fit(from, iw), circuit.Const(uint64(slots), iw))...)

	// ev1 as seen from the second eviction's slots: slots the paths share are ev1's to
	// move, slots only on path 2 stay where they are.
	t1 := make([]circuit.Word, slots)
	for i := range t1 {
		if r.second(i) == i {
			t1[i] = fit(ev1[i], wu)
		} else {
			t1[i] = circuit.Const(uint64(r.second(i)), wu)
		}
	}
	toU := fit(to, wu)
	src := b.Mux(write, circuit.Const(uint64(r.fetched()), wu), circuit.Const(uint64(r.user()), wu))
	for j := 0; j < r.kept(); j++ {
		var y circuit.Word // ev1[ev2[j]]
		switch {
		case j < r.split2():
			y = lookup(b, ev2[j], t1)
		case j < slots: // only on path 1: ev2 leaves it, ev1 moves it
			y = fit(ev1[j], wu)
		default:
			y = lookup(b, ev2[j-slots+r.split2()], t1)
		}
		// ins: the stash slot `to` takes the entering block; every other position stays.
		s := b.Mux(b.Eq(y, toU), y, src)
		b.Output(circuit.Party2, lookup(b, s, q)...)
	}
	return b.Build()
}

// words cuts w into entries of n bits.
func words(w circuit.Word, n int) []circuit.Word {
	out := make([]circuit.Word, len(w)/n)
	for i := range out {
		out[i] = w[i*n : (i+1)*n]
	}
	return out
}

// lookup returns table[x] (zero if x >= len(table)): a one-hot decoding of x (about
// len(table) AND gates) and one AND per secret table bit (constant entries are free).
func lookup(b *circuit.Builder, x circuit.Word, table []circuit.Word) circuit.Word {
	hot := decode(b, x, len(table))
	out := circuit.Const(0, len(table[0]))
	for k, e := range table {
		out = b.XorW(out, b.AndBit(hot[k], e))
	}
	return out
}

// decode returns hot[k] = (x == k) for k < m.
func decode(b *circuit.Builder, x circuit.Word, m int) []circuit.Bit {
	hot := []circuit.Bit{circuit.One}
	for i, xi := range x {
		half := 1 << i
		next := make([]circuit.Bit, min(m, 2*half))
		for k := range hot {
			if k+half < len(next) {
				t := b.And(hot[k], xi)
				next[k], next[k+half] = b.Xor(hot[k], t), t
			} else {
				next[k] = b.And(hot[k], b.Not(xi))
			}
		}
		hot = next
	}
	for len(hot) < m {
		hot = append(hot, circuit.Zero)
	}
	return hot
}
