package access

import (
	"encoding/binary"
	"fmt"

	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/oram"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Params fix a deployment: both servers must use the same.
type Params struct {
	D               int    // IndexORAM/DataORAM depth: 2^D leaves and 2^D file ids
	Stash           int    // stash bound (the paper's reference code: 33)
	BlockSize       int    // file (block) size in bytes, a multiple of elgamal.ChunkLen
	FilesPerAccount uint32 // file ids granted by CreateAccount (the paper's l_file)
	// The recursive position map (oram.Recursion): each record block packs 2^Pack leaves;
	// a map of at most 2^Base+1 entries is scanned linearly inside the front Run.
	Pack, Base int
}

// DefaultParams is 2^10 files of 4 KiB, stash 33, 16 files per account, records of 8
// leaves over a base map of at most 2^10+1 entries (chosen by BenchmarkPosWalk,
// docs/benchmarks.md).
var DefaultParams = Params{D: 10, Stash: 33, BlockSize: 4096, FilesPerAccount: 16, Pack: 3, Base: 10}

// MaxD is the largest depth: 2^20 file ids, the paper's largest evaluation. The trees'
// shares are held in memory and rewritten at each commit, which is what bounds it here.
const MaxD = 20

// ParamsLen is the length of an encoded Params.
const ParamsLen = 16

// Check validates p.
func (p Params) Check() error {
	switch {
	case p.D < 2 || p.D > MaxD:
		return fmt.Errorf("access: depth %d out of range 2..%d", p.D, MaxD)
	case p.Pack < 1 || p.Pack > 8 || p.Base < p.Pack || p.Base > 16:
		return fmt.Errorf("access: position map packing 2^%d over a base of 2^%d: want 1 <= pack <= 8, pack <= base <= 16", p.Pack, p.Base)
	case p.Stash < 2 || p.Stash > 256:
		return fmt.Errorf("access: stash %d out of range 2..256", p.Stash)
	case p.BlockSize < elgamal.ChunkLen || p.BlockSize%elgamal.ChunkLen != 0 || p.BlockSize > 1<<20:
		return fmt.Errorf("access: block size %d is not a multiple of %d up to 1 MiB", p.BlockSize, elgamal.ChunkLen)
	case p.FilesPerAccount == 0:
		return fmt.Errorf("access: files per account must be at least 1")
	case p.linkMessage() > twopc.MaxMessage:
		return fmt.Errorf("access: blocks of %d bytes at depth %d need messages of %d bytes between the servers, over the 2PC link's %d: use smaller blocks", p.BlockSize, p.D, p.linkMessage(), twopc.MaxMessage)
	}
	return nil
}

// linkMessage is the largest message one access sends on the 2PC link (twopc.SendMessage):
// SS-DOT's (8 bytes, then per offered block a sealed zero block and the sealed block, 48
// bytes of GCM overhead in all) or the distributed permutation's region (largest when the
// two eviction paths share only the root). Only valid parameters otherwise.
func (p Params) linkMessage() int {
	dot := 8 + (p.Slots()+1)*(32+p.CTSize()+16)
	return max(dot, region{p: p, shared: 1}.size()*p.CTSize())
}

// Encode is the 16-byte form both servers compare at session start.
func (p Params) Encode() []byte {
	b := make([]byte, ParamsLen)
	b[0] = 2
	b[1] = byte(p.D)
	binary.LittleEndian.PutUint16(b[2:], uint16(p.Stash))
	binary.LittleEndian.PutUint32(b[4:], uint32(p.BlockSize))
	binary.LittleEndian.PutUint32(b[8:], p.FilesPerAccount)
	b[12], b[13] = byte(p.Pack), byte(p.Base)
	return b
}

// DecodeParams is the inverse of Encode.
func DecodeParams(b []byte) (Params, error) {
	if len(b) != ParamsLen || b[0] != 2 || b[14] != 0 || b[15] != 0 {
		return Params{}, fmt.Errorf("access: not version-2 parameters")
	}
	p := Params{D: int(b[1]), Stash: int(binary.LittleEndian.Uint16(b[2:])),
		BlockSize: int(binary.LittleEndian.Uint32(b[4:])), FilesPerAccount: binary.LittleEndian.Uint32(b[8:]),
		Pack: int(b[12]), Base: int(b[13])}
	return p, p.Check()
}

// Files is the number of file ids, 0 .. Files()-1. Id Files() is the dummy a refused
// request accesses instead.
func (p Params) Files() uint64 { return 1 << p.D }

// Layout is the IndexORAM tree layout: ids of D+1 bits (the dummy included), one value bit
// (unused: the data lives in DataORAM).
func (p Params) Layout() oram.Layout {
	return oram.Layout{D: p.D, Stash: p.Stash, IDBits: p.D + 1, ValueBits: 1}
}

// Recursion is the shape of IndexORAM's position map.
func (p Params) Recursion() oram.Recursion {
	return oram.Recursion{D: p.D, Pack: p.Pack, Base: p.Base, Stash: p.Stash}
}

// Slots is the number of stash+path slots an access fetches from (the DOT adds a dummy).
func (p Params) Slots() int { return p.Layout().Slots() }

// Chunks is the number of ElGamal ciphertexts per block.
func (p Params) Chunks() int { return p.BlockSize / elgamal.ChunkLen }

// CTSize is the size of one marshalled ciphertext block.
func (p Params) CTSize() int { return p.Chunks() * elgamal.CiphertextLen }
