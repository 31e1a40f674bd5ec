package access

import "time"

// Timings is where one access's time went on this server (the paper's Table 3 breakdown,
// as far as each phase is separable here).
type Timings struct {
	Front     time.Duration // Metal-AC check + position-map scan (one 2PC Run)
	IndexORAM time.Duration // IndexORAM read and two evictions inside 2PC
	Mid       time.Duration // DOT index and insert permutation (one small Run)
	Fetch     time.Duration // SS-DOT (incl. rerandomizing the path) and two-party decryption
	Insert    time.Duration // Section 5.5: split, rerandomize, permute stash + 2 blocks
	Evict     time.Duration // Section 5.6: two permutations over stash + path, each split
	Commit    time.Duration // bbolt transaction (state, changed DataORAM blocks)
}

// Total is the sum of the phases.
func (t Timings) Total() time.Duration {
	return t.Front + t.IndexORAM + t.Mid + t.Fetch + t.Insert + t.Evict + t.Commit
}

// LastTimings is the breakdown of the last completed access.
func (p *Party) LastTimings() Timings { return p.last }

type timer struct{ t time.Time }

func newTimer() *timer { return &timer{t: time.Now()} }

// mark stores the time since the previous mark in *d.
func (t *timer) mark(d *time.Duration) {
	now := time.Now()
	*d = now.Sub(t.t)
	t.t = now
}
