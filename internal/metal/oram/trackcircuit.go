package oram

import "github.com/veil-project/veil/internal/metal/circuit"

// Section 5.6 inside the eviction circuit: trackers ride along with the blocks through
// EvictOnceFast (muxBlock carries them), then Figure 7's peel-and-fill turns them into a
// permutation, exactly as trackPermutation does in the clear.

// attachTrackers gives the block in slot j (level order) the tracker j+1, invalid slots 0.
// Free: ANDs with constants fold away.
func attachTrackers(levels [][]bw, w int) {
	j := 0
	for _, lv := range levels {
		for i := range lv {
			t := circuit.Const(uint64(j+1), w)
			for k := range t {
				if t[k] == circuit.One {
					t[k] = lv[i].valid
				}
			}
			lv[i].tr = t
			j++
		}
	}
}

// trackedPermutation peels the trackers off in slot order and fills the empty slots with
// the unused slot numbers, smallest first; it returns perm[j] (w bits, 0-based).
func trackedPermutation(b *circuit.Builder, levels [][]bw, w int) []circuit.Word {
	var tr []circuit.Word
	for _, lv := range levels {
		for _, x := range lv {
			if x.tr == nil {
				tr = append(tr, circuit.Const(0, w))
			} else {
				tr = append(tr, x.tr)
			}
		}
	}
	n := len(tr)
	// avail[m]: slot number m is not any block's tracker.
	avail := make([]circuit.Bit, n)
	for m := range avail {
		used := circuit.Zero
		for _, t := range tr {
			used = b.Or(used, b.Eq(t, circuit.Const(uint64(m+1), w)))
		}
		avail[m] = b.Not(used)
	}
	perm := make([]circuit.Word, n)
	one := circuit.Const(1, w)
	for j, t := range tr {
		empty := b.IsZero(t)
		// The first available number, one-hot, taken if this slot is empty.
		fill := circuit.Const(0, w)
		before := circuit.Zero
		for m := range avail {
			first := b.And(avail[m], b.Not(before))
			before = b.Or(before, avail[m])
			take := b.And(empty, first)
			fill = b.XorW(fill, b.AndBit(take, circuit.Const(uint64(m), w)))
			avail[m] = b.And(avail[m], b.Not(take))
		}
		perm[j] = b.Mux(empty, b.Sub(t, one), fill)
	}
	return perm
}
