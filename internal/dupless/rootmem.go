package dupless

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

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

// RootFile is a RootMemory in a small JSON file (written atomically).
func RootFile(path string) RootMemory { return &rootFile{path: path} }

type rootFile struct {
	mu   sync.Mutex
	path string
}

type rootFileData struct {
	Seq uint64 `json:"seq"`
	Sum string `json:"sha256"`
}

func (f *rootFile) Load() (uint64, [32]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var sum [32]byte
	b, err := os.ReadFile(f.path)
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
		return 0, sum, false, fmt.Errorf("%s: not a tree root memory file (delete it to trust the service's current root): %v", f.path, herr)
	}
	copy(sum[:], h)
	return d.Seq, sum, true, nil
}

func (f *rootFile) Save(seq uint64, sum [32]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(rootFileData{Seq: seq, Sum: hex.EncodeToString(sum[:])})
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(f.path, append(b, '\n'), 0o600, true)
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
