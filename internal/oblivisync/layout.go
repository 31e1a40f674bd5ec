package oblivisync

import (
	"encoding/binary"
	"fmt"
)

// Sizes derived from the backend file size B (see docs/formats/oblivisync.md).
const (
	containerVersion = 1
	containerHdr     = 1 + 24 // version byte + XChaCha20-Poly1305 nonce
	containerTag     = 16
	fileHdr          = 8 + 4 // plaintext: epoch u64 | file index u32
	fragHdr          = 16    // object id u64 | fragment index u32 | length u32
	refLen           = 17    // file u32 | side u8 | offset u32 | stored u32 | valid u32
	holeFile         = ^uint32(0)
	pageObjBit       = uint64(1) << 63
	inodesPerPage    = 64
	rootIno          = 1
	superIndex       = ^uint32(0)
)

// geometry are the sizes implied by B.
type geometry struct {
	B     int // bytes per backend file
	plain int // plaintext bytes per backend file
	S     int // bytes per side (block)
	C     int // max fragment payload
}

func newGeometry(b int) geometry {
	plain := b - containerHdr - containerTag
	s := (plain - fileHdr) / 2
	return geometry{B: b, plain: plain, S: s, C: s - fragHdr}
}

// sideStart is the offset of a side within a backend file's plaintext.
func (g geometry) sideStart(side uint8) int { return fileHdr + int(side)*g.S }

// ref locates a stored fragment. A hole (never written, reads as zeros) has File=holeFile.
// Valid <= Stored: bytes past Valid read as zeros (a truncate only shortens Valid).
type ref struct {
	File   uint32
	Side   uint8
	Off    uint32 // offset of the fragment header within the side
	Stored uint32 // payload bytes stored
	Valid  uint32
}

var hole = ref{File: holeFile}

func (r ref) isHole() bool { return r.File == holeFile }

func appendRef(b []byte, r ref) []byte {
	b = binary.BigEndian.AppendUint32(b, r.File)
	b = append(b, r.Side)
	b = binary.BigEndian.AppendUint32(b, r.Off)
	b = binary.BigEndian.AppendUint32(b, r.Stored)
	return binary.BigEndian.AppendUint32(b, r.Valid)
}

func decodeRef(b []byte) ref {
	return ref{
		File: binary.BigEndian.Uint32(b), Side: b[4], Off: binary.BigEndian.Uint32(b[5:]),
		Stored: binary.BigEndian.Uint32(b[9:]), Valid: binary.BigEndian.Uint32(b[13:]),
	}
}

// check verifies that r fits the geometry of a backend of n files.
func (r ref) check(g geometry, n int) error {
	if r.isHole() {
		if r.Stored != 0 || r.Valid != 0 || r.Side != 0 || r.Off != 0 {
			return fmt.Errorf("%w: malformed hole reference", ErrFormat)
		}
		return nil
	}
	if int(r.File) >= n || r.Side > 1 || r.Valid > r.Stored || int(r.Stored) > g.C ||
		int(r.Off)+fragHdr+int(r.Stored) > g.S {
		return fmt.Errorf("%w: fragment reference out of range (file %d side %d off %d len %d)", ErrFormat, r.File, r.Side, r.Off, r.Stored)
	}
	return nil
}

// loc identifies a fragment's position (for live-set bookkeeping).
type loc struct {
	File uint32
	Side uint8
	Off  uint32
}

func (r ref) loc() loc { return loc{r.File, r.Side, r.Off} }

// span is the number of side bytes the fragment occupies.
func (r ref) span() int { return fragHdr + int(r.Stored) }

func pageObj(p uint32) uint64 { return pageObjBit | uint64(p) }

func pageOf(ino uint64) uint32 { return uint32(ino / inodesPerPage) }
