package oram

// Tracking and permutation generation (paper Section 5.6, Figure 7), in the clear. An
// eviction only moves blocks among the slots of the stash and its path, so it is a
// permutation of those slots once empty slots are paired up: trackers (the old slot
// numbers) are attached to the blocks, the eviction runs, the trackers are peeled off in
// slot order, and the slots left without a tracker get the unused numbers, smallest first.
// DataORAM applies the same permutation to its ciphertexts (Section 5.5's distributed
// permutation) and stays synchronized with IndexORAM.

// Trace says how one access moved blocks.
type Trace struct {
	Leaf      uint64 // the path read
	From      int    // slot (stash+path order) the block was read from; -1 if it was new
	To        int    // stash slot the block was re-inserted into
	Evictions [2]EvictionTrace
}

// EvictionTrace is one eviction's permutation: after it, slot j of the stash+path holds
// what slot Perm[j] held before.
type EvictionTrace struct {
	Leaf uint64
	Perm []int
}

// slotIDs lists, in slot order over the stash and the path to l, the id of the block in
// each slot, or -1 for an empty slot.
func (t *Tree) slotIDs(l uint64) []int64 {
	var ids []int64
	for k := 0; k <= t.D+1; k++ {
		for _, b := range t.level(l, k) {
			if b.Valid {
				ids = append(ids, int64(b.ID))
			} else {
				ids = append(ids, -1)
			}
		}
	}
	return ids
}

// trackPermutation turns the block ids before and after an eviction into the permutation
// of Figure 7: trackers of blocks that stayed in the region, then the missing numbers in
// ascending order for the empty slots.
func trackPermutation(before, after []int64) []int {
	tracker := map[int64]int{}
	for i, id := range before {
		if id >= 0 {
			tracker[id] = i
		}
	}
	perm := make([]int, len(after))
	used := make([]bool, len(before))
	for j, id := range after {
		perm[j] = -1
		if id >= 0 {
			perm[j] = tracker[id]
			used[perm[j]] = true
		}
	}
	next := 0
	for j := range perm {
		if perm[j] >= 0 {
			continue
		}
		for used[next] {
			next++
		}
		perm[j], used[next] = next, true
	}
	return perm
}
