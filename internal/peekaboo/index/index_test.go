package index

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

func id(i int) (x wire.ID) {
	x[0], x[1], x[2] = byte(i>>16), byte(i>>8), byte(i)
	return x
}

// TestAgainstScan compares the index with a plain scan over random keys, with deletes and
// replacements, for exact and substring queries of every length.
func TestAgainstScan(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := New()
	keys := map[wire.ID]string{}
	var order []wire.ID
	alpha := "abcab.x"
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for j := 0; j < 1+r.IntN(8); j++ {
			b.WriteByte(alpha[r.IntN(len(alpha))])
		}
		k := id(r.IntN(2000))
		x.Put(&wire.KeyItem{ID: k, Key: b.String()})
		if _, ok := keys[k]; ok {
			order = slices.DeleteFunc(order, func(o wire.ID) bool { return o == k })
		}
		keys[k] = b.String()
		order = append(order, k)
		if r.IntN(10) == 0 {
			d := order[r.IntN(len(order))]
			if !x.Delete(d) {
				t.Fatal("delete of a live id returned false")
			}
			delete(keys, d)
			order = slices.DeleteFunc(order, func(o wire.ID) bool { return o == d })
		}
	}
	if x.Len() != len(keys) {
		t.Fatalf("Len %d, want %d", x.Len(), len(keys))
	}
	for _, q := range []string{"a", "ab", "abc", "b.x", "cab", "aaaa", "x.", "zzz", "ab.xa"} {
		for _, limit := range []int{1, 5, 1000} {
			var want []Hit
			var wantEx []Hit
			for _, o := range order {
				if strings.Contains(keys[o], q) && len(want) < limit {
					want = append(want, Hit{o, keys[o]})
				}
				if keys[o] == q && len(wantEx) < limit {
					wantEx = append(wantEx, Hit{o, keys[o]})
				}
			}
			if got := x.Substring(q, limit, nil); !slices.Equal(got, want) {
				t.Errorf("substring %q limit %d: %d hits, want %d", q, limit, len(got), len(want))
			}
			if got := x.Exact(q, limit, nil); !slices.Equal(got, wantEx) {
				t.Errorf("exact %q limit %d: %d hits, want %d", q, limit, len(got), len(wantEx))
			}
		}
	}
}

func TestPseudonymRestricted(t *testing.T) {
	x := New()
	p := [32]byte{1}
	x.Put(&wire.KeyItem{ID: id(1), Key: "secret.doc", Pseudonyms: [][32]byte{p}})
	x.Put(&wire.KeyItem{ID: id(2), Key: "public.doc"})
	if got := x.Substring(".doc", 10, nil); len(got) != 1 || got[0].ID != id(2) {
		t.Fatalf("without proof: %v", got)
	}
	allow := func(ps [][32]byte) bool { return slices.Contains(ps, p) }
	if got := x.Exact("secret.doc", 10, allow); len(got) != 1 {
		t.Fatalf("with proof: %v", got)
	}
}

func BenchmarkSubstring1M(b *testing.B) {
	x := New()
	for i := 0; i < 1_000_000; i++ {
		x.Put(&wire.KeyItem{ID: id(i), Key: fmt.Sprintf("file-%07d-report.pdf", i)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.Substring(fmt.Sprintf("%05d", i%100000), 100, nil)
	}
}
