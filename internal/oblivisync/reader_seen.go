package oblivisync

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ReaderOptions configure a read-only client.
type ReaderOptions struct {
	// Remember makes the reader keep the newest epoch it has shown in StateDir (file
	// reader-seen, the `seen` format) and refuse an older superblock afterwards, also
	// across restarts: without it a reader started afresh trusts whatever authentic
	// superblock the cloud folder holds (rollback).
	Remember bool
	// StateDir holds reader-seen; default StateRoot/<backend id> (as Options). It must NOT
	// be inside the synced folder.
	StateDir, StateRoot string
}

const readerSeenName = "reader-seen"

// OpenReaderWith opens the backend at dir read-only with options.
func OpenReaderWith(dir string, pass []byte, o ReaderOptions) (*Reader, error) {
	be, err := openBackend(dir, pass)
	if err != nil {
		return nil, err
	}
	r := &Reader{be: be, MinRefresh: 100 * time.Millisecond, copyMax: PinCopyMax}
	if o.Remember {
		if o.StateDir, err = StateDirFor(o.StateDir, o.StateRoot, be.id); err != nil {
			return nil, err
		}
		if err := CheckOutside(dir, o.StateDir, "state directory"); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		r.seenPath = filepath.Join(o.StateDir, readerSeenName)
	}
	if err := r.reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// checkRemembered refuses a superblock older than the newest this reader (or an earlier
// run of it) has shown, and records a newer one.
func (r *Reader) checkRemembered(sb *superblock) error {
	if r.seenPath == "" {
		return nil
	}
	epoch, _, ok, err := readSeenFile(r.seenPath)
	if err != nil {
		return err
	}
	if ok && sb.Epoch < epoch {
		return fmt.Errorf("%w: the backend's superblock is from epoch %d but this reader already showed epoch %d (backend rolled back? if you restored it on purpose, delete %s)", ErrIntegrity, sb.Epoch, epoch, r.seenPath)
	}
	if !ok || sb.Epoch > epoch {
		// Not fsynced: a machine crash can only lose the newest value (a weaker check),
		// never refuse a good backend.
		if err := writeAtomic(r.seenPath, encodeSeen(sb.Epoch, r.be.superNonce), false); err != nil {
			return fmt.Errorf("record superblock: %w", err)
		}
	}
	return nil
}
