package index

import (
	"sort"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

type doc struct {
	id    wire.ID
	key   string
	pseud [][32]byte
	alive bool
}

// Hit is one match.
type Hit struct {
	ID  wire.ID
	Key string
}

// Allow says whether a pair restricted to pseudonyms may match (nil: only unrestricted
// pairs match).
type Allow func(pseudonyms [][32]byte) bool

// Index is safe for concurrent use.
type Index struct {
	mu    sync.RWMutex
	docs  []doc
	byID  map[wire.ID]uint32
	exact map[string][]uint32
	tri   map[uint32][]uint32
	live  int
}

// New returns an empty index.
func New() *Index {
	return &Index{byID: map[wire.ID]uint32{}, exact: map[string][]uint32{}, tri: map[uint32][]uint32{}}
}

// Len is the number of live pairs.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.live
}

// Put adds a pair, replacing the one with the same id.
func (x *Index) Put(it *wire.KeyItem) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deleteLocked(it.ID)
	x.addLocked(doc{id: it.ID, key: it.Key, pseud: it.Pseudonyms, alive: true})
}

func (x *Index) addLocked(d doc) {
	n := uint32(len(x.docs))
	x.docs = append(x.docs, d)
	x.byID[d.id] = n
	x.exact[d.key] = append(x.exact[d.key], n)
	for i := 0; i+3 <= len(d.key); i++ {
		t := trigram(d.key[i:])
		if p := x.tri[t]; len(p) == 0 || p[len(p)-1] != n {
			x.tri[t] = append(p, n)
		}
	}
	x.live++
}

// compactLocked rebuilds the index from its live docs once the dead ones (kept so that
// postings stay append-only) outnumber them, so churn does not grow it without bound.
// Amortised over the deletes that made the dead docs, it costs O(1) per delete.
func (x *Index) compactLocked() {
	if dead := len(x.docs) - x.live; dead < 1024 || dead < x.live {
		return
	}
	old := x.docs
	x.docs, x.byID, x.live = make([]doc, 0, x.live), make(map[wire.ID]uint32, x.live), 0
	x.exact, x.tri = map[string][]uint32{}, map[uint32][]uint32{}
	for _, d := range old {
		if d.alive {
			x.addLocked(d)
		}
	}
}

// Delete removes a pair; it reports whether it was there.
func (x *Index) Delete(id wire.ID) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.deleteLocked(id)
}

func (x *Index) deleteLocked(id wire.ID) bool {
	n, ok := x.byID[id]
	if !ok {
		return false
	}
	d := &x.docs[n]
	d.alive = false
	delete(x.byID, id)
	ex := x.exact[d.key]
	for i, m := range ex {
		if m == n {
			ex = append(ex[:i:i], ex[i+1:]...)
			break
		}
	}
	if len(ex) == 0 {
		delete(x.exact, d.key)
	} else {
		x.exact[d.key] = ex
	}
	x.live--
	x.compactLocked()
	return true
}

func trigram(s string) uint32 { return uint32(s[0])<<16 | uint32(s[1])<<8 | uint32(s[2]) }

func (x *Index) ok(d *doc, allow Allow) bool {
	if !d.alive {
		return false
	}
	if len(d.pseud) == 0 {
		return true
	}
	return allow != nil && allow(d.pseud)
}

// Exact returns up to limit pairs whose key equals q.
func (x *Index) Exact(q string, limit int, allow Allow) []Hit {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []Hit
	for _, n := range x.exact[q] {
		if d := &x.docs[n]; x.ok(d, allow) {
			if out = append(out, Hit{d.id, d.key}); len(out) == limit {
				break
			}
		}
	}
	return out
}

// Substring returns up to limit pairs whose key contains q.
func (x *Index) Substring(q string, limit int, allow Allow) []Hit {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []Hit
	check := func(n uint32) bool {
		d := &x.docs[n]
		if x.ok(d, allow) && strings.Contains(d.key, q) {
			out = append(out, Hit{d.id, d.key})
		}
		return len(out) < limit
	}
	if len(q) < 3 {
		for n := range x.docs {
			if !check(uint32(n)) {
				break
			}
		}
		return out
	}
	for _, n := range x.candidates(q) {
		if !check(n) {
			break
		}
	}
	return out
}

// candidates intersects the postings of the query's two rarest trigrams.
func (x *Index) candidates(q string) []uint32 {
	var lists [][]uint32
	for i := 0; i+3 <= len(q); i++ {
		p := x.tri[trigram(q[i:])]
		if len(p) == 0 {
			return nil
		}
		lists = append(lists, p)
	}
	sort.Slice(lists, func(i, j int) bool { return len(lists[i]) < len(lists[j]) })
	if len(lists) == 1 || len(lists[0]) < 64 {
		return lists[0]
	}
	a, b := lists[0], lists[1]
	out := make([]uint32, 0, len(a))
	j := 0
	for _, n := range a {
		j += sort.Search(len(b)-j, func(k int) bool { return b[j+k] >= n })
		if j == len(b) {
			break
		}
		if b[j] == n {
			out = append(out, n)
		}
	}
	return out
}
