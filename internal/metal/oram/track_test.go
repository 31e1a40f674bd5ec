package oram

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// plainData is DataORAM in the clear: the same shape as the tree, one string per slot.
type plainData struct {
	t       *Tree
	stash   []string
	buckets [][BucketSize]string
}

func (p *plainData) slots(l uint64) []*string {
	var s []*string
	for i := range p.stash {
		s = append(s, &p.stash[i])
	}
	for d := 0; d <= p.t.D; d++ {
		b := &p.buckets[p.t.node(l, d)]
		for i := range b {
			s = append(s, &b[i])
		}
	}
	return s
}

// Section 5.3's synchronized inside-outside trees, in the clear: DataORAM is never looked at
// by the index side, it only replays the traces (fetch from From, insert at To, apply each
// eviction's permutation), and after every access each index block's slot in DataORAM
// holds that block's current data.
func TestTrackingKeepsDataSynchronized(t *testing.T) {
	for _, tc := range []struct{ d, stash, ids int }{{6, DefaultStash, 64}, {4, 20, 44}} {
		tr, _ := NewTree(tc.d, tc.stash)
		data := &plainData{t: tr, stash: make([]string, tc.stash), buckets: make([][BucketSize]string, len(tr.buckets))}
		r := rand.New(rand.NewPCG(11, uint64(tc.d)))
		pos := map[uint64]uint64{}
		content := map[uint64]string{}
		for i := 0; i < 5000; i++ {
			id := r.Uint64N(uint64(tc.ids))
			leaf, ok := pos[id]
			if !ok {
				leaf = r.Uint64N(tr.Leaves())
			}
			nl := r.Uint64N(tr.Leaves())
			write := r.IntN(2) == 0
			_, found, trace, err := tr.AccessTracked(id, leaf, nl, func(v uint64) uint64 { return v })
			if err != nil {
				t.Fatal(err)
			}
			pos[id] = nl
			// DataORAM side: fetch (SS-DOT in the real protocol), then insert read or new data.
			slots := data.slots(trace.Leaf)
			var fetched string
			if trace.From >= 0 {
				fetched = *slots[trace.From]
			}
			if found && fetched != content[id] {
				t.Fatalf("access %d: fetched %q for block %d, want %q", i, fetched, id, content[id])
			}
			if write {
				content[id] = fmt.Sprintf("%d@%d", id, i)
			} else if !found {
				content[id] = ""
			}
			data.stash[trace.To] = content[id]
			for _, ev := range trace.Evictions {
				s := data.slots(ev.Leaf)
				if !isPermutation(ev.Perm, len(s)) {
					t.Fatalf("access %d: eviction trace is not a permutation of %d slots", i, len(s))
				}
				old := make([]string, len(s))
				for j := range s {
					old[j] = *s[j]
				}
				for j := range s {
					*s[j] = old[ev.Perm[j]]
				}
			}
			checkSynchronized(t, tr, data, content)
		}
	}
}

func isPermutation(p []int, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range p {
		if v < 0 || v >= n || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}

func checkSynchronized(t *testing.T, tr *Tree, data *plainData, content map[uint64]string) {
	t.Helper()
	for i, b := range tr.stash {
		if b.Valid && data.stash[i] != content[b.ID] {
			t.Fatalf("stash slot %d: block %d but data %q", i, b.ID, data.stash[i])
		}
	}
	for n := 1; n < len(tr.buckets); n++ {
		for i, b := range tr.buckets[n] {
			if b.Valid && data.buckets[n][i] != content[b.ID] {
				t.Fatalf("node %d slot %d: block %d but data %q", n, i, b.ID, data.buckets[n][i])
			}
		}
	}
}

// Figure 7's fill rule: missing trackers go to the empty slots, smallest first.
func TestTrackPermutationFill(t *testing.T) {
	before := []int64{5, -1, 7, -1, 9}
	after := []int64{-1, 9, -1, 5, 7}
	got := trackPermutation(before, after)
	want := []int{1, 4, 3, 0, 2}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("perm %v, want %v", got, want)
		}
	}
}
