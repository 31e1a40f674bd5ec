package pir

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"sync"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
)

// Table is one server's copy of the table, in memory. Safe for concurrent use: answers
// share a read lock, changes take the write lock.
type Table struct {
	p    Params
	mu   sync.RWMutex
	data []byte   // 2^Bits buckets of BucketSize bytes
	used []uint16 // slots in use per bucket
	n    int
}

// NewTable makes an empty table (every bucket's digest computed).
func NewTable(p Params) (*Table, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	t := &Table{p: p, data: make([]byte, p.TableBytes()), used: make([]uint16, 1<<p.Bits)}
	for b := range t.used {
		t.seal(uint32(b))
	}
	return t, nil
}

// Params is the table's geometry.
func (t *Table) Params() Params { return t.p }

// Len is the number of slots in use.
func (t *Table) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.n
}

func (t *Table) bucket(b uint32) []byte {
	sz := t.p.BucketSize()
	return t.data[int(b)*sz : int(b+1)*sz]
}

// seal recomputes bucket b's digest.
func (t *Table) seal(b uint32) {
	bk := t.bucket(b)
	n := t.p.Slots * SlotSize
	d := digest(b, bk[:n])
	copy(bk[n:], d[:])
}

// find returns the position of s among bucket b's used slots and whether it is there.
func (t *Table) find(b uint32, s *Slot) (int, bool) {
	bk, u := t.bucket(b), int(t.used[b])
	lo, hi := 0, u
	for lo < hi {
		m := (lo + hi) / 2
		if bytes.Compare(bk[m*SlotSize:(m+1)*SlotSize], s[:]) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < u && bytes.Equal(bk[lo*SlotSize:(lo+1)*SlotSize], s[:])
}

// Insert adds e; false if its bucket is full or it is there already.
func (t *Table) Insert(e Entry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.insert(e, true)
}

// insert adds e, recomputing its bucket's digest when seal is set (Load seals each
// bucket once at the end instead of once per entry).
func (t *Table) insert(e Entry, seal bool) bool {
	b := e.Hash & (1<<t.p.Bits - 1)
	i, found := t.find(b, &e.Slot)
	if found || int(t.used[b]) == t.p.Slots {
		return false
	}
	bk, u := t.bucket(b), int(t.used[b])
	copy(bk[(i+1)*SlotSize:(u+1)*SlotSize], bk[i*SlotSize:u*SlotSize])
	copy(bk[i*SlotSize:], e.Slot[:])
	t.used[b]++
	t.n++
	if seal {
		t.seal(b)
	}
	return true
}

// Delete removes e; false if it is not there.
func (t *Table) Delete(e Entry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := e.Hash & (1<<t.p.Bits - 1)
	i, found := t.find(b, &e.Slot)
	if !found {
		return false
	}
	bk, u := t.bucket(b), int(t.used[b])
	copy(bk[i*SlotSize:], bk[(i+1)*SlotSize:u*SlotSize])
	clear(bk[(u-1)*SlotSize : u*SlotSize])
	t.used[b]--
	t.n--
	t.seal(b)
	return true
}

// Answer is this server's share for a DPF key: the XOR of the buckets its full-domain
// evaluation selects. Its cost is the same for every key: one evaluation and, on
// average, half the table read.
func (t *Table) Answer(k *dpf.Key) ([]byte, error) {
	if k.Bits != t.p.Bits {
		return nil, fmt.Errorf("dpf key over %d bits, the table has %d", k.Bits, t.p.Bits)
	}
	sel := k.EvalFull()
	out := make([]byte, t.p.BucketSize())
	t.mu.RLock()
	defer t.mu.RUnlock()
	for b := 0; b < 1<<t.p.Bits; b++ {
		if sel[b/64]>>(b%64)&1 == 1 {
			subtle.XORBytes(out, out, t.bucket(uint32(b)))
		}
	}
	return out, nil
}

// Digests returns every bucket's digest, in bucket order (2^Bits x 16 bytes).
func (t *Table) Digests() []byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	sz, n := t.p.BucketSize(), t.p.Slots*SlotSize
	out := make([]byte, 0, DigestSize<<t.p.Bits)
	for b := 0; b < 1<<t.p.Bits; b++ {
		out = append(out, t.data[b*sz+n:(b+1)*sz]...)
	}
	return out
}

// Differing lists the buckets whose digest differs from other's (Digests of another
// table of the same geometry), at most max.
func (t *Table) Differing(other []byte, max int) ([]uint32, error) {
	mine := t.Digests()
	if len(other) != len(mine) {
		return nil, fmt.Errorf("%d digest bytes, want %d", len(other), len(mine))
	}
	var out []uint32
	for b := 0; b < 1<<t.p.Bits && len(out) < max; b++ {
		if !bytes.Equal(mine[b*DigestSize:(b+1)*DigestSize], other[b*DigestSize:(b+1)*DigestSize]) {
			out = append(out, uint32(b))
		}
	}
	return out, nil
}

// Bucket returns a copy of bucket b (tests, and the vectors).
func (t *Table) Bucket(b uint32) []byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return bytes.Clone(t.bucket(b))
}
