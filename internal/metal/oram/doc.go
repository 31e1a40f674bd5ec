// Package oram is Metal-ORAM's tree ORAM (paper Section 5.1): Circuit ORAM (Wang, Chan,
// Shi 2015) with buckets of 3 blocks, a bounded stash and two evictions per access on
// reverse-lexicographic paths.
//
// Two forms of the same algorithm:
//
//   - Tree runs it in the clear: the oracle the 2PC form is tested against slot for slot
//     (same leaves in, same tree out), the fast in-memory mode for the stash-bound test over
//     10^5 accesses, and where Section 5.6's tracking will be checked.
//   - Party runs it inside 2PC (internal/metal/twopc) on a tree held as XOR shares (Share):
//     per access one read Run (find, remove and re-insert the block with a fresh random leaf
//     from both parties' random shares) and two eviction Runs (EvictOnceFast as a circuit,
//     mirroring evict.go line for line). Path leaves are public, as in Circuit ORAM.
//
// The position map is recursive (Section 5.3, Recursion): trees of record blocks, each
// packing 2^Pack leaves of the next larger tree, over a base map small enough to scan
// linearly. PosMap is it in the clear (the reference); PosParty runs its trees inside 2PC
// (one read Run revealing the next tree's leaf Public and two untracked eviction Runs per
// tree), the caller's own Run scanning the base map (BaseScan). Tree and Party take each
// access's current leaf from the caller: the walk's result for IndexORAM's data-level tree.
//
// Terms:
//
//	D      tree depth: 2^D leaves, buckets at depths 0 (root) .. D
//	level  0 is the stash, level d+1 the bucket at depth d on the path being processed
//	Block  Valid, ID, Leaf (the path it must stay on), Value (payload: a position-map
//	       entry in IndexORAM's inner trees; the last tree's blocks carry no file data,
//	       which lives in DataORAM)
//
// Still to build (issue 12): one Run per access instead of three per tree. Persistence of
// the shares is the caller's (internal/metal/access).
//
// Layering: a protocols package. It imports internal/metal/circuit and internal/metal/twopc;
// it must not import storage, services, other systems or cmd.
package oram
