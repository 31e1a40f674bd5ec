package oram

import "github.com/veil-project/veil/internal/metal/circuit"

// evictor builds EvictOnceFast as a circuit, mirroring evict.go line for line. Level
// numbers are words of w bits encoded +1: 0 means none (the reference's -1), k+1 level k.
type evictor struct {
	b    *circuit.Builder
	l    Layout
	leaf circuit.Word
	w    int
}

func (e *evictor) lvl(k int) circuit.Word { return circuit.Const(uint64(k+1), e.w) }

// deepestOf is the encoded deepest level a valid block of leaf x may reach on the path:
// 1 + the common prefix length (from the root) of x and the path's leaf, +1 for the
// encoding; 0 for an invalid block.
func (e *evictor) deepestOf(x bw) circuit.Word {
	b := e.b
	run := circuit.One
	cnt := circuit.Const(2, e.w) // level 1 (the root) encoded as 2
	for i := e.l.D - 1; i >= 0; i-- {
		run = b.And(run, b.Not(b.Xor(x.leaf[i], e.leaf[i])))
		inc := append(circuit.Word{run}, circuit.Const(0, e.w-1)...)
		cnt = b.Add(cnt, inc)
	}
	return b.AndBit(x.valid, cnt)
}

// deepestIn returns, for a level, the encoded depth of its deepest block and a one-hot
// vector picking it (the first one on ties, as the reference).
func (e *evictor) deepestIn(lv []bw) (circuit.Word, []circuit.Bit) {
	b := e.b
	best := circuit.Const(0, e.w)
	pick := make([]circuit.Bit, len(lv))
	for i := range lv {
		d := e.deepestOf(lv[i])
		gt := b.Less(best, d)
		best = b.Mux(gt, best, d)
		for j := 0; j < i; j++ {
			pick[j] = b.And(pick[j], b.Not(gt))
		}
		pick[i] = gt
	}
	return best, pick
}

func (e *evictor) run(levels [][]bw) {
	b := e.b
	n := len(levels)
	lk := make([]circuit.Word, n)
	picks := make([][]circuit.Bit, n)
	for k := range levels {
		lk[k], picks[k] = e.deepestIn(levels[k])
	}
	// PrepareDeepest.
	deepest := make([]circuit.Word, n)
	src, goal := circuit.Const(0, e.w), circuit.Const(0, e.w)
	for k := 0; k < n; k++ {
		deepest[k] = circuit.Const(0, e.w)
		if k > 0 {
			// goal >= k  <=>  goal+1 >= k+1  <=>  !(goal' < k+1)
			reach := b.Not(b.Less(goal, e.lvl(k)))
			deepest[k] = b.AndBit(reach, src)
		}
		gt := b.Less(goal, lk[k])
		goal = b.Mux(gt, goal, lk[k])
		src = b.Mux(gt, src, e.lvl(k))
	}
	// PrepareTarget.
	target := make([]circuit.Word, n)
	dest, src := circuit.Const(0, e.w), circuit.Const(0, e.w)
	for k := n - 1; k >= 0; k-- {
		isK := b.Eq(src, e.lvl(k))
		target[k] = b.AndBit(isK, dest)
		dest = b.AndBit(b.Not(isK), dest)
		src = b.AndBit(b.Not(isK), src)
		if k == 0 {
			continue
		}
		empty := circuit.Zero
		for _, x := range levels[k] {
			empty = b.Or(empty, b.Not(x.valid))
		}
		cond := b.Or(b.And(b.IsZero(dest), empty), b.Not(b.IsZero(target[k])))
		cond = b.And(cond, b.Not(b.IsZero(deepest[k])))
		src = b.Mux(cond, src, deepest[k])
		dest = b.Mux(cond, dest, e.lvl(k))
	}
	// EvictOnceFast.
	hold := e.l.zeroBlock()
	dest = circuit.Const(0, e.w)
	for k := 0; k < n; k++ {
		lv := levels[k]
		wr := b.And(hold.valid, b.Eq(dest, e.lvl(k)))
		towrite := muxBlock(b, wr, e.l.zeroBlock(), hold)
		hold = muxBlock(b, wr, hold, e.l.zeroBlock())
		dest = b.AndBit(b.Not(wr), dest)
		tk := b.Not(b.IsZero(target[k]))
		taken := e.l.zeroBlock()
		for i := range lv {
			take := b.And(tk, picks[k][i])
			taken = muxBlock(b, take, taken, lv[i])
			lv[i] = muxBlock(b, take, lv[i], e.l.zeroBlock())
		}
		hold = muxBlock(b, tk, hold, taken)
		dest = b.Mux(tk, dest, target[k])
		insertFirstEmpty(b, lv, towrite, towrite.valid)
	}
}
