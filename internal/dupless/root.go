package dupless

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// The tree root (docs/formats/key-record.md, "Tree root"): after every command that changes
// the namespace, the client writes .veil/roots/<seq>, an authenticated, numbered list of
// every key record it holds with a hash of the record object's bytes. Readers check each
// record they use against the newest root, and the root's number against the newest one
// this device has seen (RootMemory), so a storage service that rolls a file back to an
// older authentic record, deletes one, or presents an older root is caught.

const (
	rootVersion  = 0x01
	rootsDir     = ".veil/roots"
	maxRootBytes = 1 << 30 // compressed or not: ~10 M records
	maxRootPaths = 1 << 24
)

// ErrStale reports a record the newest tree root does not vouch for.
var ErrStale = errors.New("not as the newest authenticated tree root lists it " +
	"(rolled back, replaced or deleted by the storage service, or written by a command that did not finish: " +
	"run that command again)")

// ErrRollback reports a tree root older than one this device has seen, or a different one
// under the same number.
var ErrRollback = errors.New("the storage service presents an older tree root than this device has seen " +
	"(rollback or deletion by the service, or a second device's history it did not show us); " +
	"if you trust its current state, run 'veil root accept'")

// treeRoot is the plaintext of a tree root.
type treeRoot struct {
	Seq     uint64
	Time    int64    // nanoseconds since the Unix epoch
	Parent  [32]byte // SHA-256 of the previous root object (zero for the first)
	Entries map[string][32]byte

	sum  [32]byte // SHA-256 of this root's object bytes (set when sealed or opened)
	size int      // bytes of this root's object (set when sealed or opened)

	// A version 2 root (rootbase.go): Entries are base's with delta applied (a nil hash
	// removes the path). base is nil for a version 1 root.
	base  *rootBase
	delta map[string]*[32]byte
}

func rootName(seq uint64) string { return fmt.Sprintf("%016x", seq) }

func parseRootName(n string) (uint64, bool) {
	if len(n) != 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 16, 64)
	return v, err == nil
}

func rootAD(name string) []byte { return append([]byte("veil/v1 tree root\x00"), name...) }

var (
	// A root's literals (encrypted names and record hashes) do not shrink under Huffman
	// coding: skipping the attempt gives frames of the same size in about half the time
	// (BenchmarkSealRoot). Readers decompress any frame.
	rootEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false),
		zstd.WithNoEntropyCompression(true))
	cacheEnc, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
	rootDec, _  = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxRootBytes))
)

// rootHeadSize is the marshalled root's size before its entries: seq, time, parent, count.
const rootHeadSize = 8 + 8 + 32 + 4

func (r *treeRoot) marshal() []byte {
	b := make([]byte, 0, rootHeadSize+entriesSize(r.Entries))
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Time))
	b = append(b, r.Parent[:]...)
	return appendHashEntries(b, r.Entries)
}

// appendHashEntries appends entries (path -> record hash) as a version 1 root's tail and a
// tree base's body hold them: the count, then each path and its hash, sorted.
func appendHashEntries(b []byte, m map[string][32]byte) []byte {
	return appendSortedEntries(b, m, func(b []byte, h [32]byte) []byte { return append(b, h[:]...) })
}

// readHashEntries reads what appendHashEntries wrote, in the format what; count, if not
// nil, is the number of entries there must be.
func readHashEntries(p *parser, what string, count *uint32) (map[string][32]byte, error) {
	n := p.u32()
	if p.err == nil && (n > maxRootPaths || uint64(n)*35 > uint64(len(p.b))) {
		return nil, fmt.Errorf("%s: %d entries do not fit %d bytes", what, n, len(p.b))
	}
	if p.err == nil && count != nil && n != *count {
		return nil, fmt.Errorf("%s: %d entries, its root says %d", what, n, *count)
	}
	return sortedEntries(p, n, what, func(p *parser) (h [32]byte) {
		copy(h[:], p.take(32))
		return h
	})
}

func unmarshalRoot(b []byte) (*treeRoot, error) {
	p := &parser{b: b}
	r := &treeRoot{Seq: p.u64(), Time: int64(p.u64())}
	copy(r.Parent[:], p.take(32))
	var err error
	r.Entries, err = readHashEntries(p, "tree root", nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// sealRoot encrypts r for its object name and sets r.sum.
func (k *userKeys) sealRoot(r *treeRoot) []byte {
	return k.sealRootNonce(r, newRootNonce())
}

// newRootNonce is a fresh random nonce for a root's XChaCha20-Poly1305.
func newRootNonce() []byte {
	nonce := make([]byte, recordHeader-1)
	rand.Read(nonce)
	return nonce
}

// sealRootNonce seals r: version 1, or version 2 after sealing its base if it is new
// (its object then waits in r.base.sealed to be stored before, or with, the root).
func (k *userKeys) sealRootNonce(r *treeRoot, nonce []byte) []byte {
	if r.base != nil {
		k.sealBase(r.base)
		return k.sealCompressedAs(rootVersion2, r, rootEnc.EncodeAll(r.marshalV2(), nil), nonce)
	}
	return k.sealCompressed(r, rootEnc.EncodeAll(r.marshal(), nil), nonce)
}

// sealCompressed encrypts plain, r's compressed plaintext (version 1), and sets r.sum.
func (k *userKeys) sealCompressed(r *treeRoot, plain, nonce []byte) []byte {
	return k.sealCompressedAs(rootVersion, r, plain, nonce)
}

func (k *userKeys) sealCompressedAs(version byte, r *treeRoot, plain, nonce []byte) []byte {
	out := sealHeaded(k.roots, version, nonce, plain, rootADFor(version, rootName(r.Seq)))
	r.sum, r.size = sha256.Sum256(out), len(out)
	return out
}

// openRoot authenticates and parses the root stored as .veil/roots/name. A version 2
// root comes back with its base named but not resolved (no Entries): resolveBase.
func (k *userKeys) openRoot(b []byte, name string) (*treeRoot, error) {
	if !headedFits(k.roots, b) || b[0] != rootVersion && b[0] != rootVersion2 {
		return nil, fmt.Errorf("tree root %s: not a version %d or %d root of %d bytes", name, rootVersion, rootVersion2, len(b))
	}
	z, err := openHeaded(k.roots, b, rootADFor(b[0], name))
	if err != nil {
		return nil, fmt.Errorf("tree root %s: authentication failed (tampered, renamed, or another key's)", name)
	}
	plain, err := rootDec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("tree root %s: %w", name, err)
	}
	unmarshal := unmarshalRoot
	if b[0] == rootVersion2 {
		unmarshal = unmarshalRootV2
	}
	r, err := unmarshal(plain)
	if err != nil {
		return nil, err
	}
	if rootName(r.Seq) != name {
		return nil, fmt.Errorf("tree root %s: holds number %d", name, r.Seq)
	}
	r.sum, r.size = sha256.Sum256(b), len(b)
	return r, nil
}
