package oram

import "errors"

// Circuit ORAM's EvictOnceFast (Wang, Chan, Shi 2015, Figure 3 and Algorithms 1-3): one
// pass from the stash to the leaf that moves, at most once per level, the block that can
// go deepest, computed by the metadata scans PrepareDeepest and PrepareTarget. Levels: 0 is
// the stash, k >= 1 the bucket at depth k-1 on the path; -1 means "none".

// deepestIn returns the index in lv of the valid block that can go deepest on the path to
// l, and that depth level (-1, -1 if lv has no valid block).
func (t *Tree) deepestIn(lv []Block, l uint64) (int, int) {
	best, where := -1, -1
	for i, b := range lv {
		if b.Valid {
			if d := t.deepest(b.Leaf, l); d > best {
				best, where = d, i
			}
		}
	}
	return where, best
}

// prepareDeepest: deepest[k] is the shallowest-first source level whose deepest block can
// reach level k.
func (t *Tree) prepareDeepest(l uint64) []int {
	n := t.D + 2
	deepest := make([]int, n)
	src, goal := -1, -1
	for k := 0; k < n; k++ {
		deepest[k] = -1
		if k > 0 && goal >= k {
			deepest[k] = src
		}
		if _, lk := t.deepestIn(t.level(l, k), l); lk > goal {
			goal, src = lk, k
		}
	}
	return deepest
}

func hasEmpty(lv []Block) bool {
	for _, b := range lv {
		if !b.Valid {
			return true
		}
	}
	return false
}

// prepareTarget: target[k] is the level the block taken from level k will be written to.
func (t *Tree) prepareTarget(l uint64, deepest []int) []int {
	n := t.D + 2
	target := make([]int, n)
	for k := range target {
		target[k] = -1
	}
	dest, src := -1, -1
	for k := n - 1; k >= 0; k-- {
		if k == src {
			target[k] = dest
			dest, src = -1, -1
		}
		if k > 0 && ((dest == -1 && hasEmpty(t.level(l, k))) || target[k] != -1) && deepest[k] != -1 {
			src, dest = deepest[k], k
		}
	}
	return target
}

func (t *Tree) evictOnce(l uint64) error {
	target := t.prepareTarget(l, t.prepareDeepest(l))
	var hold Block
	dest := -1
	for k := 0; k < t.D+2; k++ {
		lv := t.level(l, k)
		var towrite Block
		if hold.Valid && k == dest {
			towrite, hold, dest = hold, Block{}, -1
		}
		if target[k] != -1 {
			i, _ := t.deepestIn(lv, l)
			if i < 0 {
				return errors.New("oram: eviction target without a block (internal invariant)")
			}
			hold, lv[i], dest = lv[i], Block{}, target[k]
		}
		if towrite.Valid && !put(lv, towrite) {
			return errors.New("oram: eviction wrote into a full bucket (internal invariant)")
		}
	}
	return nil
}
