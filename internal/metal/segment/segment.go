package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is the segment layout's version byte.
const Version = 1

// HeaderLen is the size of the header at the start of every segment:
// version (1) | nonce (16) | index u32 LE | count u32 LE | length u64 LE.
const HeaderLen = 1 + NonceLen + 4 + 4 + 8

// NonceLen is the size of the per-write nonce that binds a file's segments together.
const NonceLen = 16

// MinBlockSize is the smallest block that holds a header and at least 15 bytes of content.
const MinBlockSize = HeaderLen + 15

// ErrEmpty reports a block that was never written (all zeros): no segment, since every
// write, an empty file's included, puts a version 1 header in each block.
var ErrEmpty = errors.New("never written")

// Header is one segment's header.
type Header struct {
	Nonce  [NonceLen]byte // the same in every segment of one write
	Index  uint32         // this segment's position, 0 for the head
	Count  uint32         // segments in the file
	Length uint64         // the file's length in bytes
}

// Payload is the number of content bytes one segment of blockSize carries.
func Payload(blockSize int) int { return blockSize - HeaderLen }

// Count is the number of segments a file of length bytes takes in blocks of blockSize
// (at least one: an empty file is one segment).
func Count(length uint64, blockSize int) (uint64, error) {
	if blockSize < MinBlockSize {
		return 0, fmt.Errorf("the deployment's block of %d bytes is too small for veil's %d-byte segment header (needs at least %d)", blockSize, HeaderLen, MinBlockSize)
	}
	p := uint64(Payload(blockSize))
	n := length / p
	if length%p != 0 || n == 0 {
		n++
	}
	return n, nil
}

// Split cuts data into blocks of exactly blockSize bytes (the last zero-padded), each with
// a header carrying nonce. Block i is segment i.
func Split(data []byte, blockSize int, nonce [NonceLen]byte) ([][]byte, error) {
	n, err := Count(uint64(len(data)), blockSize)
	if err != nil {
		return nil, err
	}
	if n > 1<<32-1 {
		return nil, fmt.Errorf("a file of %d bytes needs %d segments, more than %d", len(data), n, uint32(1<<32-1))
	}
	p := Payload(blockSize)
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, blockSize)
		(&Header{Nonce: nonce, Index: uint32(i), Count: uint32(n), Length: uint64(len(data))}).put(b)
		copy(b[HeaderLen:], data[min(i*p, len(data)):min((i+1)*p, len(data))])
		out[i] = b
	}
	return out, nil
}

func (h *Header) put(b []byte) {
	b[0] = Version
	copy(b[1:], h.Nonce[:])
	binary.LittleEndian.PutUint32(b[1+NonceLen:], h.Index)
	binary.LittleEndian.PutUint32(b[5+NonceLen:], h.Count)
	binary.LittleEndian.PutUint64(b[9+NonceLen:], h.Length)
}

// Parse reads block's header and checks it on its own: the version, count and length
// consistent with the block size, the index below the count, and the padding after the
// content zero. An all-zero block is ErrEmpty.
func Parse(block []byte) (Header, error) {
	var h Header
	if len(block) < MinBlockSize {
		return h, fmt.Errorf("a block of %d bytes is too small for a segment", len(block))
	}
	if block[0] == 0 && bytes.Count(block, []byte{0}) == len(block) {
		return h, ErrEmpty
	}
	if block[0] != Version {
		return h, fmt.Errorf("not a veil segment (version byte %d, want %d)", block[0], Version)
	}
	copy(h.Nonce[:], block[1:])
	h.Index = binary.LittleEndian.Uint32(block[1+NonceLen:])
	h.Count = binary.LittleEndian.Uint32(block[5+NonceLen:])
	h.Length = binary.LittleEndian.Uint64(block[9+NonceLen:])
	if n, _ := Count(h.Length, len(block)); h.Count == 0 || n != uint64(h.Count) {
		return h, fmt.Errorf("a segment header with %d segments for %d bytes (want %d)", h.Count, h.Length, n)
	}
	if h.Index >= h.Count {
		return h, fmt.Errorf("a segment header with index %d of %d segments", h.Index, h.Count)
	}
	if c := h.content(len(block)); bytes.Count(block[HeaderLen+c:], []byte{0}) != len(block)-HeaderLen-c {
		return h, errors.New("a segment with bytes after its content")
	}
	return h, nil
}

// content is the number of content bytes in segment h.Index.
func (h *Header) content(blockSize int) int {
	p := uint64(Payload(blockSize))
	start := uint64(h.Index) * p
	return int(min(p, h.Length-start))
}

// Content returns the content bytes of a block Parse accepted.
func Content(h Header, block []byte) []byte {
	return block[HeaderLen : HeaderLen+h.content(len(block))]
}
