package oram

// StashBlocks returns a copy of the reference tree's stash, slot by slot (to check a tree
// held as shares against it from another package, e.g. Primitive Metal's, whose values are
// whole files and are compared by the caller through a version number kept in Value).
func (t *Tree) StashBlocks() []Block { return append([]Block{}, t.stash...) }

// Bucket returns the blocks of node n (heap order: 1 is the root, children 2n and 2n+1;
// 1 <= n < 2^(D+1)).
func (t *Tree) Bucket(n uint64) [BucketSize]Block { return t.buckets[n] }
