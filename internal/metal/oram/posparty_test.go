package oram

import (
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// baseCircuit is the base case alone (Metal's front circuit adds the capability check):
// shares of the base map, of x and of the new leaf in; the leaf Public and the new map
// Shared out.
func baseCircuit(t *testing.T, r Recursion) *circuit.Circuit { return baseCircuitB(t, r) }

func baseCircuitB(t testing.TB, r Recursion) *circuit.Circuit {
	b := circuit.NewBuilder()
	pos := b.SharedInput(r.BaseEntries() * r.BaseBits())
	x := b.SharedInput(r.D + 1)
	nl := b.SharedInput(r.BaseBits())
	leaf, np := r.BaseScan(b, pos, x, nl)
	b.Output(circuit.Public, leaf...)
	b.Output(circuit.Shared, np...)
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type posSide struct {
	sess *twopc.Session
	base []bool
	p    *PosParty
}

// access runs the base Run and the walk for one party.
func (s *posSide) access(c *circuit.Circuit, r Recursion, x []bool, f FreshShare) (uint64, error) {
	in := append(append(append([]bool{}, s.base...), x...), f.Leaves[r.Levels()]...)
	out, err := s.sess.Run(c, in)
	if err != nil {
		return 0, err
	}
	d := r.BaseBits()
	s.base = out[d:]
	return s.p.Walk(circuit.BitsToUint64(out[:d]), x, f)
}

func xorFresh(r Recursion, a, b FreshShare) Fresh {
	f := Fresh{}
	for j := range a.Leaves {
		f.Leaves = append(f.Leaves, circuit.BitsToUint64(xorBits(a.Leaves[j], b.Leaves[j])))
	}
	for j := range a.Init {
		v := xorBits(a.Init[j], b.Init[j])
		cd := r.Depth(j)
		var ent []uint64
		for k := 0; k < r.Entries(); k++ {
			ent = append(ent, circuit.BitsToUint64(v[k*cd:(k+1)*cd]))
		}
		f.Init = append(f.Init, ent)
	}
	return f
}

// The trees of records inside 2PC, two parties over loopback TCP, against PosMap: the
// same leaves revealed, and after every access the base map and every tree's shares equal
// the reference slot for slot (valid bit; id, leaf and every packed entry of valid blocks).
func TestPosPartyMatchesReference(t *testing.T) {
	posVsReference(t, Recursion{D: 6, Pack: 2, Base: 2, Stash: 6}, 60)
	posVsReference(t, Recursion{D: 5, Pack: 1, Base: 2, Stash: 4}, 60) // three trees, small stashes
}

func posVsReference(t *testing.T, rc Recursion, accesses int) {
	g, e := sessions(t)
	r := mrand.New(mrand.NewPCG(9, uint64(rc.D)))
	L := rc.Levels()
	base := make([]uint64, rc.BaseEntries())
	var b1, b2 []bool
	for i := range base {
		base[i] = r.Uint64N(1 << rc.BaseBits())
		s1, s2 := splitBits(r, circuit.Uint64ToBits(base[i], rc.BaseBits()))
		b1, b2 = append(b1, s1...), append(b2, s2...)
	}
	ref, err := NewPosMap(rc, base)
	if err != nil {
		t.Fatal(err)
	}
	sides := [2]*posSide{{sess: g, base: b1}, {sess: e, base: b2}}
	for _, s := range sides {
		sh, _ := NewPosShares(rc)
		if s.p, err = NewPosParty(s.sess, rc, sh, make([]uint64, L)); err != nil {
			t.Fatal(err)
		}
	}
	c := baseCircuit(t, rc)
	rnd1, rnd2 := mrand.NewChaCha8([32]byte{3}), mrand.NewChaCha8([32]byte{4})
	for i := 0; i < accesses; i++ {
		x := r.Uint64N(1<<rc.D + 1)
		x1, x2 := splitBits(r, circuit.Uint64ToBits(x, rc.D+1))
		f1, _ := rc.DrawFresh(rnd1)
		f2, _ := rc.DrawFresh(rnd2)
		var leaf2 uint64
		var err2 error
		done := make(chan struct{})
		go func() {
			leaf2, err2 = sides[1].access(c, rc, x2, f2)
			close(done)
		}()
		leaf1, err1 := sides[0].access(c, rc, x1, f1)
		<-done
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		seen, err := ref.Access(x, xorFresh(rc, f1, f2))
		if err != nil {
			t.Fatal(err)
		}
		if leaf1 != seen[0] || leaf2 != seen[0] {
			t.Fatalf("access %d to %d: 2PC revealed T_0 leaf %d/%d, reference %d", i, x, leaf1, leaf2, seen[0])
		}
		samePos(t, rc, ref, sides[0], sides[1])
	}
	for j, tr := range ref.Trees {
		t.Logf("%+v: T_%d max stash %d, %d records", rc, j+1, tr.MaxStash(), len(ref.Records[j]))
	}
}

func samePos(t *testing.T, rc Recursion, ref *PosMap, s1, s2 *posSide) {
	t.Helper()
	d := rc.BaseBits()
	base := xorBits(s1.base, s2.base)
	for y, w := range ref.Base {
		if got := circuit.BitsToUint64(base[y*d : (y+1)*d]); got != w {
			t.Fatalf("base entry %d: shares hold %d, reference %d", y, got, w)
		}
	}
	for j := 1; j <= rc.Levels(); j++ {
		l := rc.MapLayout(j)
		a, b, tr := s1.p.Shares()[j-1], s2.p.Shares()[j-1], ref.Trees[j-1]
		cmp := func(where string, x, y []bool, want []Block) {
			got := xorBits(x, y)
			for i, w := range want {
				bits := got[i*l.BlockBits() : (i+1)*l.BlockBits()]
				g := l.DecodeBlock(bits)
				if g.Valid != w.Valid || (w.Valid && (g.ID != w.ID || g.Leaf != w.Leaf)) {
					t.Fatalf("T_%d %s slot %d: shares hold %+v, reference %+v", j, where, i, g, w)
				}
				if !w.Valid {
					continue
				}
				v, cd := bits[1+l.IDBits+l.D:], rc.Depth(j-1)
				for k, e := range ref.Records[j-1][w.ID] {
					if got := circuit.BitsToUint64(v[k*cd : (k+1)*cd]); got != e {
						t.Fatalf("T_%d %s slot %d record %d entry %d: %d, reference %d", j, where, i, w.ID, k, got, e)
					}
				}
			}
		}
		cmp("stash", a.Stash, b.Stash, tr.stash)
		for n := 1; n < len(tr.buckets); n++ {
			cmp("bucket", a.Buckets[n], b.Buckets[n], tr.buckets[n][:])
		}
	}
}
