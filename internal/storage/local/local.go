package local

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

// TempDirName is the hidden folder at the root that holds Put's temporary files.
const TempDirName = ".veil-tmp"

// Backend stores objects as files below one root directory.
type Backend struct {
	root string
	tmp  string
}

var _ storage.Backend = (*Backend)(nil)

// New opens (creating if needed) a local backend rooted at dir, and removes temporary files
// left behind by a crash.
func New(dir string) (*Backend, error) {
	root, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local backend %q: %w", dir, err)
	}
	tmp := filepath.Join(root, TempDirName)
	if err := atomicfile.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("local backend: %w", err)
	}
	for _, e := range ents {
		if e.Name() != lockName {
			removeStale(filepath.Join(tmp, e.Name()))
		}
	}
	return &Backend{root: root, tmp: tmp}, nil
}

// removeStale removes a temporary file that a crashed Put left behind. A Put in flight
// (of this process or another one opening the same store) holds an flock on its file until
// the rename (atomicfile.CreateLocked), so its file is left alone.
func removeStale(p string) { atomicfile.ClaimStale(p, true) }

// createTemp creates a Put's temporary file and flocks it (removeStale skips it then).
func (b *Backend) createTemp() (*os.File, error) { return atomicfile.CreateLocked(b.tmp, "put-*") }

// Root returns the backend's root directory.
func (b *Backend) Root() string { return b.root }

// path validates dir and name and returns dir/name on disk.
func (b *Backend) path(dir, name string) (string, error) {
	if err := storage.CheckDir(dir); err != nil {
		return "", err
	}
	if err := storage.CheckName(name); err != nil {
		return "", err
	}
	if err := b.notReserved(storage.Join(dir, name)); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(storage.Join(dir, name))), nil
}

func (b *Backend) notReserved(p string) error {
	if p == TempDirName || len(p) > len(TempDirName) && p[:len(TempDirName)+1] == TempDirName+"/" {
		return fmt.Errorf("%w: %q is reserved by the local backend", storage.ErrInvalidName, TempDirName)
	}
	return nil
}

func (b *Backend) dirPath(dir string) (string, error) {
	if err := storage.CheckDir(dir); err != nil {
		return "", err
	}
	if err := b.notReserved(dir); err != nil {
		return "", err
	}
	return filepath.Join(b.root, filepath.FromSlash(dir)), nil
}

// Put writes r to a temporary file, fsyncs it and renames it over dir/name.
func (b *Backend) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	p, err := b.path(dir, name)
	if err != nil {
		return err
	}
	key := storage.Join(dir, name)
	f, err := b.createTemp()
	if err != nil {
		return b.fail("put", key, err)
	}
	tmp := f.Name()
	committed := false
	defer func() {
		if !committed {
			os.Remove(tmp)
		}
		f.Close() // the flock goes with it: after the rename, or after the removal
	}()
	if _, err := io.Copy(f, storage.ExactReader(ctx, r, size)); err != nil {
		return b.fail("put", key, err)
	}
	if err := f.Sync(); err != nil {
		return b.fail("put", key, err)
	}
	if err := b.ensureDir(dir); err != nil {
		return b.fail("put", key, err)
	}
	unlock, err := b.lock(ctx)
	if err != nil {
		return b.fail("put", key, err)
	}
	if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
		unlock()
		return fmt.Errorf("put %s: %w", key, storage.ErrIsDir)
	}
	err = os.Rename(tmp, p)
	unlock()
	if err != nil {
		return b.fail("put", key, err)
	}
	committed = true
	if err := atomicfile.SyncDir(filepath.Dir(p)); err != nil {
		return b.fail("put", key, err)
	}
	return nil
}

// Get opens dir/name for reading.
func (b *Backend) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	p, err := b.path(dir, name)
	if err != nil {
		return nil, err
	}
	key := storage.Join(dir, name)
	f, err := os.Open(p)
	if err != nil {
		return nil, b.fail("get", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, b.fail("get", key, err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("get %s: %w", key, storage.ErrIsDir)
	}
	return f, nil
}

// Stat describes dir/name.
func (b *Backend) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	p, err := b.path(dir, name)
	if err != nil {
		return storage.Info{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return storage.Info{}, b.fail("stat", storage.Join(dir, name), err)
	}
	return info(dir, fi), nil
}

func info(dir string, fi fs.FileInfo) storage.Info {
	i := storage.Info{Dir: dir, Name: fi.Name(), IsDir: fi.IsDir(), ModTime: fi.ModTime()}
	if !i.IsDir {
		i.Size = fi.Size()
	}
	return i
}
