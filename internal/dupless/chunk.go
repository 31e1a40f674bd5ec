package dupless

import (
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/restic/chunker"
	"github.com/veil-project/veil/internal/mle"
)

// Content-defined chunking. Every veil user must cut identical content at identical places,
// or nothing would deduplicate across users, so the Rabin polynomial is a fixed public
// constant (restic draws one per repository instead, which hides chunk boundaries but only
// dedups within a repository). The cost is written in docs/security.md: chunk lengths are
// a fingerprint of known content.
const chunkPolynomial = chunker.Pol(0x36f87754c55d55) // irreducible, degree 53 (tested)

// Chunk sizes: files below MinChunk are one chunk (exactly the paper's one object per file).
const (
	MinChunk = chunker.MinSize // 512 KiB
	MaxChunk = chunker.MaxSize // 8 MiB; the average is about 1 MiB
)

// zstd at a fixed level and settings so that the same chunk always compresses to the same
// bytes (required for dedup). Changing the level or the options that shape the frame
// changes every ciphertext: treat it as a format change. (Encoder concurrency only says how
// many EncodeAll calls may run at once; each output is the same.)
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxChunk+1<<20))
)

// piece is one chunk ready for key derivation: the MLE message and its hash.
type piece struct {
	plainLen int
	flags    uint8
	msg      []byte // compressed chunk, or the chunk itself
	digest   mle.Digest
}

// preparePiece compresses data when that saves at least 1/16 of it, and hashes the result
// with the suite mleFor picks for its size. It takes ownership of data.
func preparePiece(mleFor func(int) *mle.MLE, data []byte, compress bool) piece {
	p := piece{plainLen: len(data), msg: data}
	if compress && len(data) >= 64 {
		c := zenc.EncodeAll(data, make([]byte, 0, len(data)))
		if len(c) <= len(data)-len(data)/16 {
			p.msg, p.flags = c, flagCompressed
		}
	}
	p.digest = mleFor(len(p.msg)).Hash(p.msg)
	return p
}

// unpack reverses preparePiece for a decrypted MLE message.
func unpack(c *chunkRef, msg []byte) ([]byte, error) {
	if c.Flags&flagCompressed == 0 {
		return msg, nil
	}
	out, err := zdec.DecodeAll(msg, make([]byte, 0, c.PlainLen))
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	return out, nil
}

var chunkBufs = sync.Pool{New: func() any { return make([]byte, MaxChunk) }}

// splitter cuts a stream into content-defined chunks.
type splitter struct {
	c   *chunker.Chunker
	buf []byte
}

func newSplitter(r io.Reader) *splitter {
	return &splitter{c: chunker.New(r, chunkPolynomial), buf: chunkBufs.Get().([]byte)}
}

// next returns a copy of the next chunk, or io.EOF after the last one.
func (s *splitter) next() ([]byte, error) {
	ch, err := s.c.Next(s.buf)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(ch.Data))
	copy(out, ch.Data)
	return out, nil
}

func (s *splitter) close() { chunkBufs.Put(s.buf) }
