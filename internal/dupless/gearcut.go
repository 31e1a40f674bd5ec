package dupless

import (
	"errors"
	"math/bits"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
	"github.com/PlakarKorp/go-cdc-chunkers/chunkers/fastcdc"
)

// gearCut is the cut of FastCDC as the library's chunkAlgorithm ("fastcdc-v1.0.0") makes
// it with veil's sizes, the same cut points (TestGearCutMatchesLibrary, and
// TestChunkBoundaries' vector), about 2.7x the speed: the library's loop reloads its
// table and masks and checks the normal size at every byte; this one splits the scan at
// the normal size, keeps table and mask in registers, drops the bounds checks and reads
// four bytes per step. Chunking was the client's largest CPU cost in a large put (65 of
// ~350 ms for 64 MiB). The library still buffers the stream (cdc.Chunker); only its
// Algorithm is this, registered as gearAlgorithm. Not a cryptographic primitive: a
// rolling hash whose table (the library's public fastcdc.G) and masks FastCDC's
// normalized chunking fixes, so that every user cuts identical content identically.
const gearAlgorithm = "veil-" + chunkAlgorithm

// The masks of normalized chunking, level 2 (the library's calculateMasks): 2 more one
// bits than log2(NormChunk) before the normal size, 2 fewer after, spread evenly from the
// top bit.
var (
	gearMaskS = spacedMask(bits.TrailingZeros(NormChunk) + 2)
	gearMaskL = spacedMask(bits.TrailingZeros(NormChunk) - 2)
)

func spacedMask(ones int) uint64 {
	var m uint64
	for i := 0; i < ones; i++ {
		m |= 1 << (63 - i*(64/ones))
	}
	return m
}

func init() {
	if err := cdc.Register(gearAlgorithm, func() cdc.ChunkerImplementation { return gearCutter{} }); err != nil {
		panic(err)
	}
}

// gearCutter is gearCut as a cdc.ChunkerImplementation, for veil's sizes only.
type gearCutter struct{}

func (gearCutter) DefaultOptions() *cdc.ChunkerOpts {
	return &cdc.ChunkerOpts{MinSize: MinChunk, NormalSize: NormChunk, MaxSize: MaxChunk}
}

func (g gearCutter) Setup(o *cdc.ChunkerOpts) error { return g.Validate(o) }

func (gearCutter) Validate(o *cdc.ChunkerOpts) error {
	if o.MinSize != MinChunk || o.NormalSize != NormChunk || o.MaxSize != MaxChunk || o.Key != nil {
		return errors.New(gearAlgorithm + " cuts with veil's chunk sizes only, unkeyed")
	}
	return nil
}

func (gearCutter) Algorithm(_ *cdc.ChunkerOpts, data []byte, n int) int { return gearCut(data, n) }

// gearCut returns where the chunk at the start of data[:n] ends (n: the bytes available,
// all of the rest of the stream when under MaxChunk).
func gearCut(data []byte, n int) int {
	switch {
	case n <= MinChunk:
		return n
	case n > MaxChunk:
		n = MaxChunk
	}
	norm := min(n, NormChunk)
	g := &fastcdc.G
	d := data[:n]
	fp, i := uint64(0), MinChunk
	for mask, end := gearMaskS, norm; ; mask, end = gearMaskL, n {
		for ; i+4 <= end; i += 4 {
			b := d[i : i+4 : i+4]
			if fp = fp<<1 + g[b[0]]; fp&mask == 0 {
				return i
			}
			if fp = fp<<1 + g[b[1]]; fp&mask == 0 {
				return i + 1
			}
			if fp = fp<<1 + g[b[2]]; fp&mask == 0 {
				return i + 2
			}
			if fp = fp<<1 + g[b[3]]; fp&mask == 0 {
				return i + 3
			}
		}
		for ; i < end; i++ {
			if fp = fp<<1 + g[d[i]]; fp&mask == 0 {
				return i
			}
		}
		if end == n {
			return n
		}
	}
}
