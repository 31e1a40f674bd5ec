package oram

import (
	"crypto/rand"
	"testing"
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
