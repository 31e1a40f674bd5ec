package primitive

import (
	"fmt"

	"github.com/veil-project/veil/internal/metal/oram"
)

// MaxBlockSize is the largest block: the paper's largest file size, 64 KiB.
const MaxBlockSize = 64 << 10

// Params fix a Primitive Metal deployment: both servers must use the same.
type Params struct {
	D               int    // tree depth: 2^D leaves and 2^D file ids
	Stash           int    // stash bound (the paper's reference code: 33)
	BlockSize       int    // file (block) size in bytes, carried inside 2PC
	FilesPerAccount uint32 // file ids granted by CreateAccount
}

// Check validates p. The bounds keep one access's circuit in memory: Primitive Metal is a
// small-N baseline.
func (p Params) Check() error {
	switch {
	case p.D < 2 || p.D > 12:
		return fmt.Errorf("primitive: depth %d out of range 2..12", p.D)
	case p.Stash < 2 || p.Stash > 256:
		return fmt.Errorf("primitive: stash %d out of range 2..256", p.Stash)
	case p.BlockSize < 1 || p.BlockSize > MaxBlockSize:
		return fmt.Errorf("primitive: block size %d out of range 1..%d bytes", p.BlockSize, MaxBlockSize)
	case p.FilesPerAccount == 0:
		return fmt.Errorf("primitive: files per account must be at least 1")
	}
	return nil
}

// Files is the number of file ids, 0 .. Files()-1. Id Files() is the dummy a refused
// request accesses instead.
func (p Params) Files() uint64 { return 1 << p.D }

// Layout is the tree layout: ids of D+1 bits (the dummy included), values of the whole
// block.
func (p Params) Layout() oram.Layout {
	return oram.Layout{D: p.D, Stash: p.Stash, IDBits: p.D + 1, ValueBits: 8 * p.BlockSize}
}

// RequestLen is the length of one server's part of a request: its Metal-AC request share,
// then its share of the block.
func (p Params) RequestLen() int { return acRequestLen + p.BlockSize }
