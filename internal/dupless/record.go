package dupless

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/verr"
)

// Record types.
const (
	typeFile    = 1
	typeSymlink = 2
	typeDir     = 3
	typeSpecial = 4 // a FIFO or device, metadata only (version 3 records)
)

// File type bits of a special record's Mode (stat(2)'s S_IFMT values).
const (
	modeTypeMask = 0o170000
	modeFIFO     = 0o010000
	modeCharDev  = 0o020000
	modeBlockDev = 0o060000
)

// Chunk flags.
const (
	flagCompressed = 1 << 0 // the MLE message is the zstd frame of the chunk
	flagRandomKey  = 1 << 1 // the key server failed: K is random (no dedup)
	flagInline     = 1 << 2 // reserved (docs/formats/key-record.md): never written; accepted on read only in a one-chunk record
	knownFlags     = flagCompressed | flagRandomKey | flagInline
)

// chunkRef is what a key record keeps of one chunk.
type chunkRef struct {
	Flags    uint8
	PlainLen uint32     // bytes of file content in this chunk
	MsgLen   uint32     // bytes of the MLE message (compressed or plain)
	Key      mle.Key    // K
	Digest   mle.Digest // H(M) of the MLE message: the guard of guarded decryption
	Tag      mle.Tag    // MLE tag of the chunk ciphertext (its object name; H(K) for HCE2)
	// Suite and Scheme are the chunk ciphertext's header as the client wrote it; reading
	// refuses a ciphertext whose header names anything else (version 2). Zero in version 1
	// records, which did not bind them: readers then accept only guarded schemes.
	Suite  mle.Suite
	Scheme mle.Scheme
}

// record is the plaintext of a key record (docs/formats/key-record.md).
type record struct {
	Type   uint8
	Mode   uint32 // permission bits and setuid/setgid/sticky, as in stat(2)
	MTime  int64  // nanoseconds since the Unix epoch
	Size   uint64 // bytes of the whole file
	Target string // symlink target
	KeyID  string // key server key id the chunk keys came from ("" if none)
	Rdev   uint64 `json:",omitempty"` // a special record's device number (version 3)
	Chunks []chunkRef
}

// size is the entry's size as lstat(2) gives it, and so ls -l shows it: a file's bytes, a
// symlink's target length (its record's Size is 0: docs/formats/key-record.md).
func (r *record) size() int64 {
	if r.Type == typeSymlink {
		return int64(len(r.Target))
	}
	return int64(r.Size)
}

const (
	recordVersion   = 0x02                   // written; 0x01 is still read
	recordVersion3  = 0x03                   // written for special files only (version 2 plus Rdev)
	chunkRefSizeV1  = 1 + 4 + 4 + 3*32       // flags, lengths, K, H(M), tag
	chunkRefSize    = chunkRefSizeV1 + 1 + 1 // version 2 adds suite and scheme
	maxRecordChunks = 1 << 20                // 1 Mi chunks: 512 GiB at the minimum chunk size, ~1 TiB on average
	recordHeader    = 1 + 24                 // version, nonce
)

// ErrRecord reports a key record that fails authentication or does not parse: tampered,
// swapped from another name, truncated, or not written by this user. It is an integrity
// error: errors.Is(err, verr.ErrIntegrity) holds, as for ErrIntegrity.
var ErrRecord = verr.NewIntegrity("key record rejected")

func (r *record) marshal() []byte {
	b := make([]byte, 0, 32+len(r.Target)+len(r.KeyID)+len(r.Chunks)*chunkRefSize)
	b = append(b, r.Type)
	b = binary.BigEndian.AppendUint32(b, r.Mode)
	b = binary.BigEndian.AppendUint64(b, uint64(r.MTime))
	b = binary.BigEndian.AppendUint64(b, r.Size)
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Target)))
	b = append(b, r.Target...)
	b = append(b, byte(len(r.KeyID)))
	b = append(b, r.KeyID...)
	if r.version() >= recordVersion3 {
		b = binary.BigEndian.AppendUint64(b, r.Rdev)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Chunks)))
	for _, c := range r.Chunks {
		b = append(b, c.Flags, byte(c.Suite), byte(c.Scheme))
		b = binary.BigEndian.AppendUint32(b, c.PlainLen)
		b = binary.BigEndian.AppendUint32(b, c.MsgLen)
		b = append(b, c.Key[:]...)
		b = append(b, c.Digest[:]...)
		b = append(b, c.Tag[:]...)
	}
	return b
}

// parser reads big-endian fields and remembers the first error.
type parser struct {
	b   []byte
	err error
}

func (p *parser) take(n int) []byte {
	if p.err != nil || n > len(p.b) {
		if p.err == nil {
			p.err = fmt.Errorf("%w: truncated", ErrRecord)
		}
		return make([]byte, n)
	}
	v := p.b[:n]
	p.b = p.b[n:]
	return v
}
func (p *parser) u8() uint8   { return p.take(1)[0] }
func (p *parser) u16() uint16 { return binary.BigEndian.Uint16(p.take(2)) }
func (p *parser) u32() uint32 { return binary.BigEndian.Uint32(p.take(4)) }
func (p *parser) u64() uint64 { return binary.BigEndian.Uint64(p.take(8)) }

// appendSortedEntries appends what sortedEntries reads: the count (u32), then each entry
// of m in increasing path order, its path (u16 length, then its bytes) and what value
// appends.
func appendSortedEntries[E any](b []byte, m map[string]E, value func([]byte, E) []byte) []byte {
	paths := make([]string, 0, len(m))
	for p := range m {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b = binary.BigEndian.AppendUint32(b, uint32(len(paths)))
	for _, p := range paths {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		b = value(b, m[p])
	}
	return b
}

// sortedEntries reads the n entries that end a tree root or a put cache: each a path
// (u16 length, then its bytes; not empty, in strictly increasing order) followed by what
// value reads; nothing may follow them. what names the format in errors.
func sortedEntries[E any](p *parser, n uint32, what string, value func(*parser) E) (map[string]E, error) {
	m := make(map[string]E, n)
	prev := ""
	for i := uint32(0); i < n && p.err == nil; i++ {
		path := string(p.take(int(p.u16())))
		if path == "" || i > 0 && path <= prev {
			return nil, fmt.Errorf("%s: entry %d out of order or empty", what, i)
		}
		m[path], prev = value(p), path
	}
	if p.err == nil && len(p.b) != 0 {
		return nil, fmt.Errorf("%s: %d bytes after the entries", what, len(p.b))
	}
	if p.err != nil {
		return nil, fmt.Errorf("%s: %w", what, p.err)
	}
	return m, nil
}

// unmarshalRecord parses the plaintext of a record of the given version (1 or 2).
func unmarshalRecord(b []byte, version byte) (*record, error) {
	refSize := chunkRefSize
	if version == 1 {
		refSize = chunkRefSizeV1
	}
	p := &parser{b: b}
	r := &record{Type: p.u8(), Mode: p.u32(), MTime: int64(p.u64()), Size: p.u64()}
	r.Target = string(p.take(int(p.u16())))
	r.KeyID = string(p.take(int(p.u8())))
	if version >= recordVersion3 {
		r.Rdev = p.u64()
	}
	n := p.u32()
	if p.err == nil && (n > maxRecordChunks || int(n)*refSize != len(p.b)) {
		return nil, fmt.Errorf("%w: %d chunks do not fit %d bytes", ErrRecord, n, len(p.b))
	}
	if p.err != nil {
		return nil, p.err
	}
	if n > 0 {
		r.Chunks = make([]chunkRef, n)
	}
	var total uint64
	for i := range r.Chunks {
		c := &r.Chunks[i]
		c.Flags = p.u8()
		if version >= 2 {
			c.Suite, c.Scheme = mle.Suite(p.u8()), mle.Scheme(p.u8())
			if !knownFormat(c.Suite, c.Scheme) {
				return nil, fmt.Errorf("%w: chunk %d: unknown suite/scheme %d/%d", ErrRecord, i+1, c.Suite, c.Scheme)
			}
		}
		c.PlainLen, c.MsgLen = p.u32(), p.u32()
		copy(c.Key[:], p.take(32))
		copy(c.Digest[:], p.take(32))
		copy(c.Tag[:], p.take(32))
		if c.Flags&^knownFlags != 0 {
			return nil, fmt.Errorf("%w: unknown chunk flags 0x%02x", ErrRecord, c.Flags)
		}
		if c.Flags&flagInline != 0 && n != 1 {
			return nil, fmt.Errorf("%w: inline chunk in a %d-chunk file", ErrRecord, n)
		}
		total += uint64(c.PlainLen)
	}
	switch {
	case r.Type < typeFile || r.Type > typeSpecial:
		return nil, fmt.Errorf("%w: unknown type %d", ErrRecord, r.Type)
	case (r.Type == typeSpecial) != (version == recordVersion3):
		return nil, fmt.Errorf("%w: type %d in a version %d record", ErrRecord, r.Type, version)
	case r.Type == typeSpecial && !knownSpecial(r.Mode):
		return nil, fmt.Errorf("%w: special file of mode %o", ErrRecord, r.Mode)
	case r.Type != typeSpecial && r.Mode&modeTypeMask != 0:
		return nil, fmt.Errorf("%w: file type bits %o in a type %d record", ErrRecord, r.Mode&modeTypeMask, r.Type)
	case r.Type != typeSpecial && r.Rdev != 0:
		return nil, fmt.Errorf("%w: device number in a type %d record", ErrRecord, r.Type)
	case total != r.Size:
		return nil, fmt.Errorf("%w: chunks hold %d bytes, size says %d", ErrRecord, total, r.Size)
	case r.Type != typeFile && n != 0:
		return nil, fmt.Errorf("%w: %d chunks in a non-file record", ErrRecord, n)
	}
	return r, nil
}

// recordAD binds a record to the encrypted path it is stored under, so the storage service
// cannot swap records (and with them contents) between names, and to its version byte
// (each version has its own label), so a record cannot be read as another version.
func recordAD(version byte, encPath string) []byte {
	label := fmt.Sprintf("veil/v%d key record\x00", version)
	return append([]byte(label), encPath...)
}

// version is the record version r is written as: 3 for special files (the only records
// that need its device field), else 2, so every other record stays readable by veil
// versions that know only 1 and 2.
func (r *record) version() byte {
	if r.Type == typeSpecial {
		return recordVersion3
	}
	return recordVersion
}

// knownSpecial reports whether a special record's mode names a FIFO or a device.
func knownSpecial(mode uint32) bool {
	switch mode & modeTypeMask {
	case modeFIFO, modeCharDev, modeBlockDev:
		return true
	}
	return false
}

// knownFormat reports whether a record may name this chunk format: the guarded schemes
// veil writes (never HCE1, which is not tag consistent) over a known suite.
func knownFormat(s mle.Suite, sc mle.Scheme) bool {
	return (s == mle.SHA256 || s == mle.BLAKE3) && (sc == mle.CE || sc == mle.HCE2 || sc == mle.RCE)
}

// seal encrypts and authenticates the record for encPath.
func (k *userKeys) sealRecord(r *record, encPath string) []byte {
	var nonce [recordHeader - 1]byte
	rand.Read(nonce[:])
	return k.sealRecordNonce(r, encPath, nonce[:])
}

func (k *userKeys) sealRecordNonce(r *record, encPath string, nonce []byte) []byte {
	out := make([]byte, recordHeader, recordHeader+len(r.Chunks)*chunkRefSize+64)
	out[0] = r.version()
	copy(out[1:], nonce)
	return k.records.Seal(out, out[1:recordHeader], r.marshal(), recordAD(out[0], encPath))
}

// openRecord authenticates and parses a record read from encPath.
func (k *userKeys) openRecord(b []byte, encPath string) (*record, error) {
	if len(b) < recordHeader+k.records.Overhead() {
		return nil, fmt.Errorf("%w: %d bytes is too short", ErrRecord, len(b))
	}
	if b[0] != 1 && b[0] != recordVersion && b[0] != recordVersion3 {
		return nil, fmt.Errorf("%w: unknown version %d", ErrRecord, b[0])
	}
	pt, err := k.records.Open(nil, b[1:recordHeader], b[recordHeader:], recordAD(b[0], encPath))
	if err != nil {
		return nil, fmt.Errorf("%w: authentication failed (tampered, moved, or another user's)", ErrRecord)
	}
	return unmarshalRecord(pt, b[0])
}
