// Package oram is Metal-ORAM's tree ORAM (paper Section 5.1): Circuit ORAM (Wang, Chan,
// Shi 2015) with buckets of 3 blocks, a bounded stash and two evictions per access on
// reverse-lexicographic paths.
//
// This first piece is the plain reference: Tree runs the algorithm in the clear. It is
// (1) the oracle the 2PC circuits of IndexORAM will be tested against gate for gate (same
// leaves in, same tree out), (2) the fast in-memory mode for the stash-bound test over 10^5
// accesses, and (3) where Section 5.6's tracking will be checked (which slot each block
// moves to during an eviction). It keeps no position map: the caller supplies each access's
// current and new leaf (the recursion of Section 5.3 supplies them from the next smaller
// tree; tests keep a plain map).
//
// Terms:
//
//	D      tree depth: 2^D leaves, buckets at depths 0 (root) .. D
//	level  0 is the stash, level d+1 the bucket at depth d on the path being processed
//	Block  Valid, ID, Leaf (the path it must stay on), Value (payload: a position-map
//	       entry in IndexORAM's inner trees; the last tree's blocks carry no file data,
//	       which lives in DataORAM)
//
// Layering: a protocols package; standard library only. It must not import twopc,
// storage, services or cmd.
package oram
