package oblivisync

import (
	"errors"

	"github.com/veil-project/veil/internal/sealedkey"
	"github.com/veil-project/veil/internal/verr"
)

// Sentinel errors callers branch on (errors.Is). Every error returned by this package
// wraps one of these or carries the failing path and operation.
var (
	// ErrWrongPassphrase: the key file did not open with the passphrase (or was altered).
	ErrWrongPassphrase = sealedkey.ErrWrongPassphrase
	// ErrIntegrity: a backend or journal file failed authentication, framing or the
	// rollback check. No plaintext from it is used. (Also verr.ErrIntegrity.)
	ErrIntegrity = verr.NewIntegrity("integrity check failed")
	// ErrFormat: bytes of an unknown version or impossible layout.
	ErrFormat = errors.New("unsupported format")
	// ErrLocked: another writer holds the local state directory.
	ErrLocked = errors.New("another writer is running on this backend")
	// ErrBehind: this writer's state directory is behind the backend (another writer
	// synced since); it must adopt the backend's state before writing (Adopt).
	ErrBehind = errors.New("this writer's state is behind the backend")
	// ErrLeased: the backend's lease names another, live writer.
	ErrLeased = errors.New("the backend is leased to another writer")
	// ErrNoSpace: the pending buffer or the backend is full.
	ErrNoSpace = errors.New("no space left")
	// ErrFileTooBig: a file would grow past the backend's capacity (EFBIG).
	ErrFileTooBig = errors.New("file too large for this backend")
	// ErrReadOnly: a write on a read-only client.
	ErrReadOnly = errors.New("read-only")
	// Namespace errors, mapped to errno by the FUSE layer.
	ErrNotExist = errors.New("no such file or directory")
	ErrExist    = errors.New("file exists")
	ErrNotDir   = errors.New("not a directory")
	ErrIsDir    = errors.New("is a directory")
	ErrNotEmpty = errors.New("directory not empty")
	ErrInvalid  = errors.New("invalid argument")
	// ErrStale: a read-only client's file version is gone (ESTALE): at open, the name
	// now leads to a newer inode (look it up again); on read, the version an open
	// descriptor pinned was overwritten because this reader fell more than two epochs
	// behind it. Never partial or mixed data.
	ErrStale = errors.New("stale file handle")
)
