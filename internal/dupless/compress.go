package dupless

import (
	"bytes"
	"runtime"

	"github.com/klauspost/compress/zstd"
	"github.com/veil-project/veil/internal/mle"
)

// The compression policy decides, from a chunk's bytes alone, whether its MLE message is
// the chunk or its zstd frame, and which frame. Every user must decide the same for the
// same chunk, or the same content would no longer deduplicate across users: the policy is
// pinned by testdata/dupless/compress.json (TestCompressionPolicy) and specified in
// docs/formats/key-record.md. Changing it changes new ciphertexts of compressible content
// (no format change: each reference says whether its chunk is compressed, and every
// reader decompresses any zstd frame), so content stored before and after the change does
// not deduplicate across the two: say so in the CHANGELOG.
//
// Policy 2 (session 6): zstd's fastest level (policy 1 used its default level: 2% fewer
// bytes on workload c for ~25% more compression CPU, the largest client cost after the
// OPRF), and no attempt on chunks that begin like an already-compressed format.
var (
	zenc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true))
	zdec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(MaxChunk+1<<20))
	// zprobe decides quickly whether a large chunk is worth compressing at all.
	zprobe, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false))
)

// probeSize is the prefix of a chunk that is test-compressed first: when even it does not
// shrink, the chunk is stored uncompressed without compressing it whole (random or already
// compressed data costs ~3% of a full attempt). The decision depends on the chunk's bytes
// alone, so it is as deterministic as the compression itself.
const probeSize = 32 << 10

// compressedMagic are the first bytes of formats whose content is already compressed
// (gzip, zstd, xz, bzip2, lz4 frame, zip local header, 7z, PNG, JPEG, GIF): a chunk that
// begins with one is stored as it is, without a zstd attempt that would not save 1/16.
// On /usr/share/doc, 1,700 .gz files are a third of the bytes.
var compressedMagic = [][]byte{
	{0x1f, 0x8b, 0x08},
	{0x28, 0xb5, 0x2f, 0xfd},
	{0xfd, '7', 'z', 'X', 'Z', 0x00},
	[]byte("BZh"),
	{0x04, 0x22, 0x4d, 0x18},
	[]byte("PK\x03\x04"),
	{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c},
	{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'},
	{0xff, 0xd8, 0xff},
	[]byte("GIF8"),
}

// looksCompressed reports whether data begins like an already-compressed format.
func looksCompressed(data []byte) bool {
	for _, m := range compressedMagic {
		if bytes.HasPrefix(data, m) {
			return true
		}
	}
	return false
}

// piece is one chunk ready for key derivation: the MLE message and its hash.
type piece struct {
	plainLen int
	flags    uint8
	msg      []byte // compressed chunk, or the chunk itself
	digest   mle.Digest
	// room is msg's array from mle.HeaderSize bytes before it, when the piece owns it:
	// its one encryption may then write the ciphertext over msg (encryptChunk). nil: not.
	room []byte
}

// preparePiece compresses data when that saves at least 1/16 of it, and hashes the result
// with the suite mleFor picks for its size. It takes ownership of data.
func preparePiece(mleFor func(int) *mle.MLE, data []byte, compress bool) piece {
	p := piece{plainLen: len(data), msg: data}
	if compress && len(data) >= 64 && worthCompressing(data) {
		c := zenc.EncodeAll(data, make([]byte, 0, len(data)+len(data)>>7+64))
		if len(c) <= len(data)-len(data)/16 {
			p.msg, p.flags = c, flagCompressed
		}
	}
	p.digest = mleFor(len(p.msg)).Hash(p.msg)
	return p
}

// worthCompressing decides whether a chunk is given to zstd: not when it begins like a
// compressed format, nor when it is 128 KiB or more and its first 32 KiB do not shrink by
// 1/32 at zstd's fastest level.
func worthCompressing(data []byte) bool {
	if looksCompressed(data) {
		return false
	}
	if len(data) < 4*probeSize {
		return true
	}
	probe := zprobe.EncodeAll(data[:probeSize], make([]byte, 0, probeSize+probeSize>>7+64))
	return len(probe) <= probeSize-probeSize/32
}
