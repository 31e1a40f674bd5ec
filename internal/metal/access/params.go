package access

import (
	"encoding/binary"
	"fmt"

	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/oram"
)

// Params fix a deployment: both servers must use the same.
type Params struct {
	D               int    // IndexORAM/DataORAM depth: 2^D leaves and 2^D file ids
	Stash           int    // stash bound (the paper's reference code: 33)
	BlockSize       int    // file (block) size in bytes, a multiple of elgamal.ChunkLen
	FilesPerAccount uint32 // file ids granted by CreateAccount (the paper's l_file)
}

// DefaultParams is 2^10 files of 4 KiB, stash 33, 16 files per account.
var DefaultParams = Params{D: 10, Stash: 33, BlockSize: 4096, FilesPerAccount: 16}

// ParamsLen is the length of an encoded Params.
const ParamsLen = 16

// Check validates p. D is bounded by the non-recursive position map, scanned linearly.
func (p Params) Check() error {
	switch {
	case p.D < 2 || p.D > 16:
		return fmt.Errorf("access: depth %d out of range 2..16", p.D)
	case p.Stash < 2 || p.Stash > 256:
		return fmt.Errorf("access: stash %d out of range 2..256", p.Stash)
	case p.BlockSize < elgamal.ChunkLen || p.BlockSize%elgamal.ChunkLen != 0 || p.BlockSize > 1<<20:
		return fmt.Errorf("access: block size %d is not a multiple of %d up to 1 MiB", p.BlockSize, elgamal.ChunkLen)
	case p.FilesPerAccount == 0:
		return fmt.Errorf("access: files per account must be at least 1")
	}
	return nil
}

// Encode is the 16-byte form both servers compare at session start.
func (p Params) Encode() []byte {
	b := make([]byte, ParamsLen)
	b[0] = 1
	b[1] = byte(p.D)
	binary.LittleEndian.PutUint16(b[2:], uint16(p.Stash))
	binary.LittleEndian.PutUint32(b[4:], uint32(p.BlockSize))
	binary.LittleEndian.PutUint32(b[8:], p.FilesPerAccount)
	return b
}

// DecodeParams is the inverse of Encode.
func DecodeParams(b []byte) (Params, error) {
	if len(b) != ParamsLen || b[0] != 1 {
		return Params{}, fmt.Errorf("access: bad parameters encoding")
	}
	p := Params{D: int(b[1]), Stash: int(binary.LittleEndian.Uint16(b[2:])),
		BlockSize: int(binary.LittleEndian.Uint32(b[4:])), FilesPerAccount: binary.LittleEndian.Uint32(b[8:])}
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

// Slots is the number of stash+path slots an access fetches from (the DOT adds a dummy).
func (p Params) Slots() int { return p.Layout().Slots() }

// Chunks is the number of ElGamal ciphertexts per block.
func (p Params) Chunks() int { return p.BlockSize / elgamal.ChunkLen }

// CTSize is the size of one marshalled ciphertext block.
func (p Params) CTSize() int { return p.Chunks() * elgamal.CiphertextLen }
