package oblivisync

import (
	"errors"
	"fmt"

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
	// ErrRolledBack: the backend is older than what this machine's writer state last saw
	// (also ErrIntegrity). After a deliberate restore of the folder, AdoptWith with
	// AcceptRollback makes the state follow it.
	ErrRolledBack = fmt.Errorf("%w: backend rolled back", ErrIntegrity)
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

// rolledBack is the error of a writer state that saw a newer backend than the one the
// folder holds now: it says what to do in either case (the cloud rolled it back, or the
// user restored the folder from a backup).
func rolledBack(backendDir, stateDir, what string) error {
	return fmt.Errorf("%w: %s. If you restored the folder from a backup on purpose, run 'veil osync adopt --accept-rollback --backend %s --state %s' (this state's unsynced changes are set aside, not applied); otherwise put back the folder's newest version (your sync service's history)",
		ErrRolledBack, what, backendDir, stateDir)
}
