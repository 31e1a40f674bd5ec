package storage

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/veil-project/veil/internal/verr"
)

// Errors that callers branch on. Backends wrap them with context; test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrChanged is a batch refused because an object's Match condition failed: what is
	// stored under its name is not the content it names (or nothing is).
	ErrChanged     = errors.New("stored object changed")
	ErrNotEmpty    = errors.New("directory not empty")
	ErrIsDir       = errors.New("is a directory")
	ErrNotDir      = errors.New("not a directory")
	ErrInvalidName = errors.New("invalid name")
	ErrIntegrity   = verr.NewIntegrity("integrity check failed") // and verr.ErrIntegrity
	ErrPermission  = errors.New("permission denied")
	ErrTooLarge    = errors.New("object too large")
	ErrQuota       = errors.New("quota exceeded")
	// ErrCannotStore is a service that can store nothing for now (disk full, its own
	// storage down): a client stops a run instead of failing every file in turn.
	ErrCannotStore = errors.New("the storage service cannot store anything now")
)

// Info describes one entry of a directory.
type Info struct {
	Dir     string    // the directory holding the entry
	Name    string    // the entry's name within Dir
	Size    int64     // object size in bytes; 0 for directories
	IsDir   bool      // true for a directory
	ModTime time.Time // last modification, as the backend records it (may be zero)
}

// Path returns Dir/Name (just Name in the root).
func (i Info) Path() string { return Join(i.Dir, i.Name) }

// Backend is the storage service API (paper Fig. 5). Contract, checked by the conformance
// suite in storagetest:
//
//   - Put stores r's bytes as dir/name, creating missing parent directories (only once the
//     object is stored: a failed Put creates nothing; ErrNotDir if a parent is a file). It replaces an
//     existing object atomically: readers see the old or the new bytes, never a mix or a
//     prefix; with concurrent Puts to one name the last to finish wins, whole. size is the
//     number of bytes r yields, or -1 if unknown. If r fails or yields a different number of
//     bytes than size, nothing is stored and the error is returned. Putting onto a directory
//     name is ErrIsDir.
//   - Get returns the object's bytes; ErrNotFound if absent, ErrIsDir for a directory. A
//     backend that can detect corruption returns ErrIntegrity (possibly from Read/Close).
//   - Stat describes dir/name (a file or a directory); ErrNotFound if absent.
//   - List returns the entries directly in dir, sorted by name; ErrNotFound if dir does not
//     exist, ErrNotDir if it is a file. The root always exists.
//   - Delete removes a file, or an empty directory (ErrNotEmpty otherwise); ErrNotFound if
//     absent. A directory outlives its last file (it stays, empty, until deleted).
//   - Search returns every entry named exactly name in dir or below it, sorted by path.
//   - Create makes directory dir and its parents; it is not an error if dir exists as a
//     directory, ErrNotDir if a file is in the way.
//   - Move renames srcDir/srcName to dstDir/dstName, creating dstDir's parents; a directory
//     moves with everything below it. ErrExists if the destination exists, ErrNotFound if the
//     source does not. A file move is atomic; a directory move may not be on backends without
//     real directories (S3), which must still leave every object readable under one of the
//     two names if interrupted.
type Backend interface {
	Put(ctx context.Context, dir, name string, r io.Reader, size int64) error
	Get(ctx context.Context, dir, name string) (io.ReadCloser, error)
	Stat(ctx context.Context, dir, name string) (Info, error)
	List(ctx context.Context, dir string) ([]Info, error)
	Delete(ctx context.Context, dir, name string) error
	Search(ctx context.Context, dir, name string) ([]Info, error)
	Create(ctx context.Context, dir string) error
	Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error
}
