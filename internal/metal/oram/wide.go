package oram

import "fmt"

// Wide values: Primitive Metal (paper Section 5.2, internal/metal/primitive) keeps each
// file's data in its block, so a value is a whole file. The circuits and Party are the
// same for any value width; only Layout.Check (and Block, whose Value is a uint64, used by
// the reference Tree) stop at 64 bits. A wide layout is checked by CheckWide and its empty
// tree made by NewWideShare; Party.Access then takes and returns values of ValueBits bits.

// MaxWideValueBits is the widest value a wide layout may carry: a 64 KiB file (the paper's
// largest file size).
const MaxWideValueBits = 8 << 16

// CheckWide validates a layout whose values may be up to MaxWideValueBits bits.
func (l Layout) CheckWide() error {
	narrow := l
	narrow.ValueBits = 0
	if err := narrow.Check(); err != nil || l.ValueBits < 0 || l.ValueBits > MaxWideValueBits {
		return fmt.Errorf("oram: bad wide layout %+v", l)
	}
	return nil
}

// NewWideShare returns the share of an empty tree of a wide layout.
func NewWideShare(l Layout) (*Share, error) {
	if err := l.CheckWide(); err != nil {
		return nil, err
	}
	s := &Share{L: l, Stash: make([]bool, l.Stash*l.BlockBits()), Buckets: make([][]bool, 1<<(l.D+1))}
	for i := 1; i < len(s.Buckets); i++ {
		s.Buckets[i] = make([]bool, BucketSize*l.BlockBits())
	}
	return s, nil
}

// StashBlocks returns a copy of the reference tree's stash, slot by slot (to check a tree
// held as shares against it from another package).
func (t *Tree) StashBlocks() []Block { return append([]Block{}, t.stash...) }

// Bucket returns the blocks of node n (heap order: 1 is the root, children 2n and 2n+1;
// 1 <= n < 2^(D+1)).
func (t *Tree) Bucket(n uint64) [BucketSize]Block { return t.buckets[n] }
