package oram

import (
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// BenchmarkAccess2PC: one access (read Run + two eviction Runs) on a single tree of 2^16
// leaves with the paper's bucket and stash sizes, blocks of metadata only (IndexORAM's last
// tree: valid, 16-bit id, leaf), both parties in this process over loopback TCP.
func BenchmarkAccess2PC(b *testing.B) {
	l := Layout{D: 16, Stash: DefaultStash, IDBits: 16, ValueBits: 0}
	g, e := sessionsB(b)
	sh1, _ := NewShare(l)
	sh2, _ := NewShare(l)
	p1, err := NewParty(g, sh1, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	p2, _ := NewParty(e, sh2, rand.Reader)
	id := make([]bool, l.IDBits)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf := uint64(i*7919) % (1 << l.D)
		done := make(chan error)
		go func() { _, err := p2.Access(leaf, id, false, nil); done <- err }()
		if _, err := p1.Access(leaf, id, false, nil); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(p1.read.NumAND+2*p1.evict.NumAND), "AND/access")
}

// BenchmarkPosWalk: the position map of 2^16 (and 2^20) ids, one access = the base Run
// plus the walk down the trees of records, both parties over loopback TCP, for several
// packings and base sizes (how Metal's defaults were chosen: docs/benchmarks.md).
func BenchmarkPosWalk(b *testing.B) {
	for _, rc := range []Recursion{
		{D: 16, Pack: 2, Base: 8}, {D: 16, Pack: 3, Base: 7}, {D: 16, Pack: 3, Base: 10},
		{D: 16, Pack: 4, Base: 8}, {D: 16, Pack: 5, Base: 6}, {D: 16, Pack: 3, Base: 13},
		{D: 20, Pack: 3, Base: 8}, {D: 20, Pack: 4, Base: 8},
	} {
		rc.Stash = DefaultStash
		b.Run(fmt.Sprintf("D%d-pack%d-base%d", rc.D, rc.Pack, rc.Base), func(b *testing.B) { benchWalk(b, rc) })
	}
}

func benchWalk(b *testing.B, rc Recursion) {
	g, e := sessionsB(b)
	c := baseCircuitB(b, rc)
	var sides [2]*posSide
	ands := c.NumAND
	for i, s := range []*twopc.Session{g, e} {
		sh, _ := NewPosShares(rc)
		p, err := NewPosParty(s, rc, sh, make([]uint64, rc.Levels()))
		if err != nil {
			b.Fatal(err)
		}
		sides[i] = &posSide{sess: s, base: make([]bool, rc.BaseEntries()*rc.BaseBits()), p: p}
	}
	walk, _ := sides[0].p.CircuitCost()
	ands += walk
	x := make([]bool, rc.D+1)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f1, _ := rc.DrawFresh(rand.Reader)
		f2, _ := rc.DrawFresh(rand.Reader)
		done := make(chan error)
		go func() { _, err := sides[1].access(c, rc, x, f2); done <- err }()
		if _, err := sides[0].access(c, rc, x, f1); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ands), "AND/access")
	b.ReportMetric(float64(rc.Levels()), "trees")
}
