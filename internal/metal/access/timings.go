package access

import "time"

// Timings is where one access's time went on this server (the paper's Table 3 breakdown,
// as far as each phase is separable here).
type Timings struct {
	Front     time.Duration // Metal-AC check + position-map scan (one 2PC Run)
	IndexORAM time.Duration // IndexORAM read and two evictions inside 2PC
	Mid       time.Duration // one Run: DOT index, insert and evictions composed, split (σ2)
	Fetch     time.Duration // SS-DOT (incl. rerandomizing the path) and two-party decryption
	Permute   time.Duration // Sections 5.5-5.6: the one permutation, rerandomized by both
	Commit    time.Duration // bbolt transaction (state, changed DataORAM blocks)
}

// Total is the sum of the phases.
func (t Timings) Total() time.Duration {
	return t.Front + t.IndexORAM + t.Mid + t.Fetch + t.Permute + t.Commit
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
