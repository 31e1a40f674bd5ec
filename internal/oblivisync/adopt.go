package oblivisync

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// AdoptReport says what Adopt did.
type AdoptReport struct {
	Epoch    uint64   `json:"epoch"`     // the backend epoch this state now follows
	StateDir string   `json:"state_dir"` // the writer state directory
	SetAside string   `json:"set_aside"` // where the old journal went ("" if there was none)
	Moved    []string `json:"moved"`     // files moved there
	Bytes    int64    `json:"bytes"`     // their total size
	// PendingFragments were waiting in the old journal at its last checkpoint (later
	// records may have added more): changes that had not reached the backend.
	PendingFragments int `json:"pending_fragments"`
}

// Adopt makes a writer state directory that is behind the backend (another writer
// synced since: OpenWriter fails with ErrBehind) follow the backend again. Its journal,
// checkpoint and records are moved, not deleted, into a "set-aside-<epoch>-<time>"
// subdirectory and are NOT applied: the next writer starts from the backend's committed
// state. It refuses a state directory that is not behind (that would throw away changes a
// writer could still sync) and one whose backend looks rolled back (ErrIntegrity).
// stateRoot is as Options.StateRoot.
func Adopt(dir string, pass []byte, stateDir, stateRoot string) (AdoptReport, error) {
	return AdoptWith(dir, pass, stateDir, stateRoot, AdoptOptions{})
}

// AdoptOptions change what Adopt accepts.
type AdoptOptions struct {
	// AcceptRollback also adopts a backend older than the state directory's records
	// (ErrRolledBack), for a folder the user restored from a backup on purpose; the
	// writer then starts from the restored state.
	AcceptRollback bool
}

// AdoptWith is Adopt with options.
func AdoptWith(dir string, pass []byte, stateDir, stateRoot string, o AdoptOptions) (AdoptReport, error) {
	be, err := openBackend(dir, pass)
	if err != nil {
		return AdoptReport{}, err
	}
	if stateDir, err = StateDirFor(stateDir, stateRoot, be.id); err != nil {
		return AdoptReport{}, err
	}
	if err := CheckOutside(dir, stateDir, "state directory"); err != nil {
		return AdoptReport{}, err
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return AdoptReport{}, fmt.Errorf("state dir: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return AdoptReport{}, fmt.Errorf("%s: %w", stateDir, ErrLocked)
	}
	sb, err := be.readSuper()
	if err != nil {
		return AdoptReport{}, err
	}
	rep := AdoptReport{Epoch: sb.Epoch, StateDir: stateDir}
	err = checkSeen(dir, stateDir, sb.Epoch, be.superNonce)
	ck, ckErr := readCheckpoint(stateDir, &be.keys.journal, be.g, be.params.Files)
	if err == nil && ckErr == nil && ck != nil && ck.epoch > sb.Epoch {
		err = rolledBack(dir, stateDir, fmt.Sprintf("it is at epoch %d but this machine's journal saw epoch %d", sb.Epoch, ck.epoch))
	}
	switch {
	case err == nil:
		return rep, fmt.Errorf("%w: %s is not behind the backend (epoch %d); nothing to adopt (mount or sync it as usual)", ErrInvalid, stateDir, sb.Epoch)
	case errors.Is(err, ErrRolledBack) && o.AcceptRollback:
	case !errors.Is(err, ErrBehind):
		return rep, err
	}
	if ckErr == nil && ck != nil {
		rep.PendingFragments = len(ck.pend)
	}
	if err := rep.setAside(sb.Epoch); err != nil {
		return rep, err
	}
	r := seenRecord{Epoch: sb.Epoch, Nonce: be.superNonce, Next: randomBytes(superNonceLen), V2: true}
	if err := writeAtomic(filepath.Join(stateDir, seenName), encodeSeen2(r), true); err != nil {
		return rep, fmt.Errorf("record superblock: %w", err)
	}
	return rep, nil
}

// testOnlyAdoptMoved, when set (tests only), runs after each file setAside moves: a test
// stops the adoption there, as a crash would.
var testOnlyAdoptMoved func(name string)

// setAside moves the journal segments, checkpoint, status and seen into a new
// subdirectory of the state directory. `seen` goes last: until it is moved the state
// still reads as behind, so an adoption cut short by a crash is simply run again (found
// by review: with `seen` moved before the segments, a crash in between left segments
// without a checkpoint and no record; the writer refused them as corrupt and adopt found
// nothing behind: TestAdoptInterruptedCanBeRerun).
func (rep *AdoptReport) setAside(epoch uint64) error {
	segs, err := listSegments(rep.StateDir)
	if err != nil {
		return err
	}
	var names []string
	for _, s := range segs {
		names = append(names, segName(s))
	}
	names = append(names, checkpointName, statusName, seenName)
	sub := filepath.Join(rep.StateDir, fmt.Sprintf("set-aside-%d-%s", epoch, time.Now().UTC().Format("20060102T150405Z")))
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(rep.StateDir, n))
		if err != nil {
			continue
		}
		if rep.SetAside == "" {
			// An adoption cut short in this same second made it already.
			if err := os.Mkdir(sub, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("set aside the old journal: %w", err)
			}
			rep.SetAside = sub
		}
		if err := os.Rename(filepath.Join(rep.StateDir, n), filepath.Join(sub, n)); err != nil {
			return fmt.Errorf("set aside the old journal: %w", err)
		}
		rep.Moved = append(rep.Moved, n)
		rep.Bytes += fi.Size()
		if testOnlyAdoptMoved != nil {
			testOnlyAdoptMoved(n)
		}
	}
	return nil
}
