package oblivisync

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const superName = "super"

// backend is an opened backend directory: parameters, keys and file I/O. It caches a few
// decrypted backend files (keyed by index and the epoch they were written at).
type backend struct {
	dir    string
	params Params
	g      geometry
	id     [idLen]byte
	keys   keys
	fsync  bool
	tag    string // writer tag in this writer's temp file names (tempfiles.go)

	superNonce []byte // nonce of the superblock last read or written by this process

	mu       sync.Mutex
	cache    map[uint32]cached
	order    []uint32
	inflight map[uint32][]byte // plaintexts of the epoch being written
}

func (b *backend) setInflight(m map[uint32][]byte) {
	b.mu.Lock()
	b.inflight = m
	b.mu.Unlock()
}

type cached struct {
	epoch uint64
	tag   uint64 // nonceTag of the file's nonce (0: a never-written file)
	plain []byte
}

const cacheFiles = 8

func blockName(i uint32) string { return fmt.Sprintf("b%06d", i) }

// openBackend reads the key file and derives the keys; it does not read the superblock.
func openBackend(dir string, pass []byte) (*backend, error) {
	raw, err := os.ReadFile(filepath.Join(dir, keyFileName))
	if err != nil {
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			// A share that is not mounted, a sync client that has not made the folder yet:
			// telling the user to init here would start an empty backend beside the real one.
			return nil, fmt.Errorf("backend folder %s does not exist (a share not mounted, or not synced to this machine yet? 'veil osync init' creates a new, empty backend)", dir)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not an osync backend (no %s; run 'veil osync init')", dir, keyFileName)
		}
		return nil, err
	}
	kf, master, err := openKeyFile(raw, pass)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, keyFileName), err)
	}
	k, err := deriveKeys(master)
	if err != nil {
		return nil, err
	}
	return &backend{dir: dir, params: kf.params, g: newGeometry(kf.params.FileSize), id: kf.id, keys: k,
		fsync: true, cache: map[uint32]cached{}}, nil
}

func (b *backend) path(i uint32) string {
	if i == superIndex {
		return filepath.Join(b.dir, superName)
	}
	return filepath.Join(b.dir, blockName(i))
}

// readSuper reads, authenticates and decodes the superblock.
func (b *backend) readSuper() (*superblock, error) {
	raw, err := os.ReadFile(b.path(superIndex))
	if err != nil {
		return nil, fmt.Errorf("read superblock: %w", err)
	}
	plain, err := openContainer(&b.keys.backend, b.id, 'S', superIndex, b.g, raw)
	if err != nil {
		return nil, fmt.Errorf("superblock: %w", err)
	}
	sb, err := decodeSuper(plain, b.g, b.params.Files)
	if err == nil {
		b.superNonce = raw[1:containerHdr]
	}
	return sb, err
}

// checkSuperOurs verifies that the superblock on disk is still the one this writer last
// read or wrote: otherwise another writer (a second machine mounting read-write, or a
// stale copy restored by the sync client) is rewriting the backend, and carrying on
// would overwrite fragments only the other superblock references.
func (b *backend) checkSuperOurs() error {
	hdr, err := b.superHeader()
	if err != nil {
		return err
	}
	if !bytes.Equal(hdr[1:], b.superNonce) {
		return fmt.Errorf("%w: the superblock was replaced by someone else (another read-write mount of this backend, or a rolled-back copy); stopping before overwriting its data", ErrIntegrity)
	}
	return nil
}

// superHeader reads only the superblock's container header (version byte and nonce).
// Every superblock is sealed under a fresh random nonce, so the header changes with
// every epoch.
func (b *backend) superHeader() ([]byte, error) {
	f, err := os.Open(b.path(superIndex))
	if err != nil {
		return nil, fmt.Errorf("read superblock: %w", err)
	}
	defer f.Close()
	hdr := make([]byte, containerHdr)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("read superblock: %w", err)
	}
	return hdr, nil
}

// writeSuper writes s sealed with nonce, which the writer recorded in `seen` beforehand
// (so that on restart it recognises the superblock as its own).
func (b *backend) writeSuper(s *superblock, nonce []byte) error {
	plain, err := s.encode(b.g)
	if err != nil {
		return err
	}
	img := sealContainer(&b.keys.backend, b.id, 'S', superIndex, plain, nonce)
	if err := b.writeFile(b.path(superIndex), img); err != nil {
		return err
	}
	b.superNonce = nonce
	return nil
}

// readBlock returns the plaintext of backend file i, checking it was written at an epoch
// no older than the superblock says (rollback) and, when the superblock records the
// version's tag (tag != 0), that a file stamped with that very epoch is that version: an
// aborted epoch's file carries an epoch number a restarted writer may have used again
// (found by review in session 12). A newer file is accepted as today: a later epoch's, or
// one an aborted epoch left behind, which keeps every fragment the committed state has
// in it. A never-written file (want == 0) that is still all zeros reads as an empty
// plaintext.
func (b *backend) readBlock(i uint32, want, tag uint64) ([]byte, error) {
	b.mu.Lock()
	if p, ok := b.inflight[i]; ok {
		b.mu.Unlock()
		return p, nil
	}
	if c, ok := b.cache[i]; ok && c.epoch >= want && (want > 0 || c.epoch == 0) && (tag == 0 || c.epoch > want || c.tag == tag) {
		b.mu.Unlock()
		return c.plain, nil
	}
	b.mu.Unlock()
	raw, err := os.ReadFile(b.path(i))
	if err != nil {
		return nil, fmt.Errorf("read backend file %s: %w", blockName(i), err)
	}
	var plain []byte
	var got uint64
	if want == 0 && len(raw) == b.g.B && allZero(raw) {
		plain = make([]byte, b.g.plain)
	} else {
		got = nonceTag(raw[1:])
		plain, err = openContainer(&b.keys.backend, b.id, 'B', i, b.g, raw)
		if err != nil {
			return nil, fmt.Errorf("backend file %s: %w", blockName(i), err)
		}
		if got := binary.BigEndian.Uint32(plain[8:]); got != i {
			return nil, fmt.Errorf("backend file %s: %w: header names file %d", blockName(i), ErrIntegrity, got)
		}
	}
	epoch := binary.BigEndian.Uint64(plain)
	if epoch < want {
		return nil, fmt.Errorf("backend file %s: %w: written at epoch %d but the superblock says %d (rolled back, or not synced here yet)", blockName(i), errBehind, epoch, want)
	}
	if tag != 0 && epoch == want && got != tag {
		return nil, fmt.Errorf("backend file %s: %w: written at epoch %d but not the version the superblock committed (tag %016x, want %016x: an aborted epoch's file put back, or not synced here yet)", blockName(i), errUncommitted, epoch, got, tag)
	}
	b.remember(i, cached{epoch, got, plain})
	return plain, nil
}

func (b *backend) remember(i uint32, c cached) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.cache[i]; !ok {
		b.order = append(b.order, i)
		if len(b.order) > cacheFiles {
			delete(b.cache, b.order[0])
			b.order = b.order[1:]
		}
	}
	b.cache[i] = c
}

// writeBlock seals plain (already stamped with its epoch and index) under nonce (from
// fileNonce; the superblock records its tag) and replaces backend file i.
func (b *backend) writeBlock(i uint32, plain, nonce []byte) error {
	epoch := binary.BigEndian.Uint64(plain)
	img := sealContainer(&b.keys.backend, b.id, 'B', i, plain, nonce)
	if err := b.writeFile(b.path(i), img); err != nil {
		return fmt.Errorf("write backend file %s: %w", blockName(i), err)
	}
	b.remember(i, cached{epoch, nonceTag(nonce), plain})
	return nil
}

// fileNonce returns a random nonce for a backend file; its tag (first 8 bytes) is never
// 0, which the superblock uses for "not known".
func fileNonce() []byte {
	for {
		if n := randomBytes(24); nonceTag(n) != 0 {
			return n
		}
	}
}

// fragment returns the payload of the fragment at r, checking its header names (obj, idx).
func (b *backend) fragment(r ref, obj uint64, idx uint32, sb *superblock) ([]byte, error) {
	plain, err := b.readBlock(r.File, sb.Written[r.File], sb.tag(r.File))
	if err != nil {
		return nil, err
	}
	off := b.g.sideStart(r.Side) + int(r.Off)
	h := plain[off : off+fragHdr]
	be := binary.BigEndian
	if be.Uint64(h) != obj || be.Uint32(h[8:]) != idx || be.Uint32(h[12:]) != r.Stored {
		return nil, fmt.Errorf("%w: backend file %s side %d offset %d does not hold fragment %d of object %x", errStale, blockName(r.File), r.Side, r.Off, idx, obj)
	}
	return plain[off+fragHdr : off+fragHdr+int(r.Valid)], nil
}

// errStale: a fragment was overwritten after the superblock we hold (a reader raced the
// writer); reload the superblock and retry.
var errStale = fmt.Errorf("%w: stale fragment reference", ErrIntegrity)

// errBehind: a backend file is older than the superblock says. On a reader's machine the
// sync client delivers an epoch's files in any order, so the new superblock can arrive
// before the files it names: readers wait a little for them before calling it a rollback.
var errBehind = fmt.Errorf("%w: backend file older than the superblock", ErrIntegrity)

// errUncommitted: a backend file stamped with the epoch the superblock says, but another
// version than the one it committed (its tag differs). Readers wait for it like errBehind:
// on a reader's machine the committed version may still be in transit, the aborted one
// it replaces already here. It is both ErrIntegrity and errBehind (for the retries).
var errUncommitted error = uncommitted{}

type uncommitted struct{}

func (uncommitted) Error() string        { return ErrIntegrity.Error() }
func (uncommitted) Is(target error) bool { return target == ErrIntegrity || target == errBehind }

// behindRetries x behindWait bound how long a reader waits for files still in transit.
const (
	behindRetries = 40
	behindWait    = 50 * time.Millisecond
)

func allZero(b []byte) bool {
	return len(bytes.TrimLeft(b, "\x00")) == 0
}
