package dupless

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/veil-project/veil/internal/atomicfile"
)

// RootMemory keeps, for one namespace, the newest tree root this device has seen, so that a
// storage service cannot present an older one later. Implementations must be safe for
// concurrent use; a nil RootMemory remembers only within the Client's lifetime.
type RootMemory interface {
	// Load returns the remembered root's number and hash; ok is false if none was seen.
	Load() (seq uint64, sum [32]byte, ok bool, err error)
	// Save remembers a root (the caller only ever moves it forward, or on 'root accept').
	Save(seq uint64, sum [32]byte) error
}

// RootFile is a RootMemory in a small file of two slots (docs/formats/key-record.md,
// "What the device remembers"). Each save overwrites the older slot in place and waits for
// fdatasync: one flush of an allocated page, ~0.1 ms here, against ~0.6 ms for a new file
// renamed over the old one with its two fsyncs; a save cut short by a crash leaves the
// other slot, the root remembered before it. legacy, if not empty, is the JSON file an
// older veil kept (read while it exists, removed by the first save).
func RootFile(path, legacy string) RootMemory { return &rootFile{path: path, legacy: legacy} }

type rootFile struct {
	mu     sync.Mutex
	path   string
	legacy string
}

type rootFileData struct {
	Seq uint64 `json:"seq"`
	Sum string `json:"sha256"`
}

// The root memory file: slot 0 at offset 0, slot 1 at rootSlotStride (each in its own
// page, so a torn write of one cannot touch the other); the valid slot of the higher
// generation is the memory.
const (
	rootSlotSize   = 64
	rootSlotStride = 4096
	rootFileSize   = rootSlotStride + rootSlotSize
	rootSlotMagic  = "veilrm1\x00"
)

// rootSlot is one slot: magic, generation, root number and hash (big endian), then the
// first 8 bytes of SHA-256 of those 56 bytes.
type rootSlot struct {
	gen, seq uint64
	sum      [32]byte
}

func (s rootSlot) encode() []byte {
	b := make([]byte, 0, rootSlotSize)
	b = append(b, rootSlotMagic...)
	b = binary.BigEndian.AppendUint64(b, s.gen)
	b = binary.BigEndian.AppendUint64(b, s.seq)
	b = append(b, s.sum[:]...)
	h := sha256.Sum256(b)
	return append(b, h[:8]...)
}

func decodeRootSlot(b []byte) (rootSlot, bool) {
	var s rootSlot
	if len(b) < rootSlotSize || string(b[:8]) != rootSlotMagic {
		return s, false
	}
	h := sha256.Sum256(b[:56])
	if !bytes.Equal(h[:8], b[56:64]) {
		return s, false
	}
	s.gen, s.seq = binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:])
	copy(s.sum[:], b[24:56])
	return s, true
}

// newestSlot returns the file's valid slot of the higher generation and its index.
func newestSlot(b []byte) (rootSlot, int, bool) {
	s0, ok0 := decodeRootSlot(b)
	var s1 rootSlot
	ok1 := false
	if len(b) >= rootFileSize {
		s1, ok1 = decodeRootSlot(b[rootSlotStride:])
	}
	switch {
	case ok1 && (!ok0 || s1.gen > s0.gen):
		return s1, 1, true
	case ok0:
		return s0, 0, true
	}
	return rootSlot{}, 0, false
}

func (f *rootFile) Load() (uint64, [32]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq, sum, ok, err := f.loadLegacy()
	if err != nil {
		return 0, sum, false, err
	}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return seq, sum, ok, nil
	}
	if err != nil {
		return 0, sum, false, err
	}
	s, _, valid := newestSlot(b)
	if !valid {
		return 0, sum, false, fmt.Errorf("%s: not a tree root memory file (delete it to trust the service's current root)", f.path)
	}
	if ok && seq > s.seq { // an older veil remembered a newer root since
		return seq, sum, true, nil
	}
	return s.seq, s.sum, true, nil
}

// loadLegacy reads the JSON file of an older veil, if there is one.
func (f *rootFile) loadLegacy() (uint64, [32]byte, bool, error) {
	var sum [32]byte
	if f.legacy == "" {
		return 0, sum, false, nil
	}
	b, err := os.ReadFile(f.legacy)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, sum, false, nil
	}
	if err != nil {
		return 0, sum, false, err
	}
	var d rootFileData
	h, herr := []byte(nil), json.Unmarshal(b, &d)
	if herr == nil {
		h, herr = hex.DecodeString(d.Sum)
	}
	if herr != nil || len(h) != 32 {
		return 0, sum, false, fmt.Errorf("%s: not a tree root memory file (delete it to trust the service's current root): %v", f.legacy, herr)
	}
	copy(sum[:], h)
	return d.Seq, sum, true, nil
}

// Save remembers root seq unless the file already remembers a newer one: several veil
// processes of one device (a mount following new roots beside a put, two puts) share the
// file, and one that read an older root must not move it back. A lock file beside it
// (flock) orders their read-modify-writes.
func (f *rootFile) Save(seq uint64, sum [32]byte) error { return f.store(seq, sum, false) }

// Accept remembers root seq even if it is older than the one remembered ('veil root
// accept' after a restore of the service).
func (f *rootFile) Accept(seq uint64, sum [32]byte) error { return f.store(seq, sum, true) }

func (f *rootFile) store(seq uint64, sum [32]byte, back bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	unlock, err := f.lockFile()
	if err != nil {
		return err
	}
	defer unlock()
	if err := f.save(seq, sum, back); err != nil {
		return err
	}
	if f.legacy != "" { // the new file holds the newest root now
		if err := os.Remove(f.legacy); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		f.legacy = ""
	}
	return nil
}

// lockFile takes the exclusive flock of the memory's lock file (path + ".lock").
func (f *rootFile) lockFile() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return nil, err
	}
	l, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := flock(int(l.Fd()), syscall.LOCK_EX); err != nil {
		l.Close()
		if noLocks(err) {
			return func() {}, nil // a file system without locks (NFS mounted nolock): as before locks
		}
		return nil, fmt.Errorf("lock %s: %w", l.Name(), err)
	}
	return func() { l.Close() }, nil // closing releases the lock
}

// flock is syscall.Flock; tests play a file system without locks.
var flock = syscall.Flock

// noLocks reports a file system that takes no flock (found by review: an NFS home
// mounted without lock support made every save fail). The memory is then saved as before
// session 15: each process moves it forward from what it read, unordered with the others.
func noLocks(err error) bool {
	return errors.Is(err, syscall.ENOLCK) || errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS)
}

func (f *rootFile) save(seq uint64, sum [32]byte, back bool) error {
	b, err := os.ReadFile(f.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	cur, i, ok := newestSlot(b)
	if ok && !back && cur.seq > seq {
		return nil // another process remembered a newer root meanwhile
	}
	slot := rootSlot{gen: cur.gen + 1, seq: seq, sum: sum}.encode()
	if !ok || len(b) != rootFileSize { // a new file (or one to replace whole): written once, renamed in
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return err
		}
		page := make([]byte, rootFileSize)
		copy(page, slot)
		return atomicfile.Write(f.path, page, 0o600, true)
	}
	w, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = w.WriteAt(slot, int64(1-i)*rootSlotStride)
	if err == nil {
		err = syscall.Fdatasync(int(w.Fd()))
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// memRoot is the RootMemory of a Client given none: it remembers for the Client's lifetime.
type memRoot struct {
	mu  sync.Mutex
	seq uint64
	sum [32]byte
	ok  bool
}

func (m *memRoot) Load() (uint64, [32]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq, m.sum, m.ok, nil
}

func (m *memRoot) Save(seq uint64, sum [32]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq, m.sum, m.ok = seq, sum, true
	return nil
}
