package oblivisync

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// The writer remembers, in its local state directory, the superblock it last wrote (or
// found on open) — its epoch and nonce — plus the nonce it will give the NEXT superblock. The checkpoint alone cannot say where the backend should be, because
// idle epochs skip the checkpoint; without this record the cloud could put back any
// superblock of those idle epochs, and the writer would reuse their epoch numbers.
//
// The next nonce is chosen (and recorded, fsynced) before the superblock that uses it is
// written, so on open the writer accepts exactly two backend superblocks: the one it
// recorded, or the next one it was about to write when it crashed (numbered one or, as a
// writer's first epoch may be, two past the recorded one: see nextEpoch). Anything else newer
// was written by another writer (a second machine, or this machine with another state
// directory): this state is behind the backend, and syncing it would revert that
// writer's data. The writer then refuses to start (ErrBehind) until `veil osync adopt`.
//
//	seen v2 = version u8 (2) | epoch u64 | nonce [24] | next nonce [24]   (57 bytes)
//	seen v1 = version u8 (1) | epoch u64 | nonce [24]                      (33 bytes)
//
// v1 is what older writers wrote and what read-only mounts keep in reader-seen.
const (
	seenName      = "seen"
	seenVersion   = 1
	seenLen       = 1 + 8 + 24
	seenVersion2  = 2
	seenLen2      = seenLen + 24
	superNonceLen = 24
)

// seenRecord is a decoded `seen` (v1 records have no Next).
type seenRecord struct {
	Epoch uint64
	Nonce []byte
	Next  []byte // nonce of the superblock of Epoch+1 (v2 only)
	V2    bool
}

func encodeSeen(epoch uint64, nonce []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte{seenVersion}, epoch)
	return append(b, nonce...)
}

func encodeSeen2(r seenRecord) []byte {
	b := binary.BigEndian.AppendUint64([]byte{seenVersion2}, r.Epoch)
	b = append(b, r.Nonce...)
	return append(b, r.Next...)
}

func decodeSeen(b []byte) (seenRecord, error) {
	switch {
	case len(b) == seenLen && b[0] == seenVersion:
		return seenRecord{Epoch: binary.BigEndian.Uint64(b[1:]), Nonce: b[9:seenLen]}, nil
	case len(b) == seenLen2 && b[0] == seenVersion2:
		return seenRecord{Epoch: binary.BigEndian.Uint64(b[1:]), Nonce: b[9:33], Next: b[33:57], V2: true}, nil
	}
	return seenRecord{}, fmt.Errorf("%w: not a version %d record of %d bytes or a version %d record of %d bytes", ErrFormat, seenVersion, seenLen, seenVersion2, seenLen2)
}

// readSeen returns the writer's record; ok is false when there is none (a new state
// directory, or one from before this file existed).
func readSeen(stateDir string) (rec seenRecord, ok bool, err error) {
	return readSeenRecord(filepath.Join(stateDir, seenName))
}

func readSeenRecord(path string) (rec seenRecord, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return seenRecord{}, false, nil
	}
	if err != nil {
		return seenRecord{}, false, err
	}
	rec, err = decodeSeen(b)
	if err != nil {
		return seenRecord{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return rec, true, nil
}

// readSeenFile reads a record in the `seen` format (also a reader's reader-seen).
func readSeenFile(path string) (epoch uint64, nonce []byte, ok bool, err error) {
	rec, ok, err := readSeenRecord(path)
	return rec.Epoch, rec.Nonce, ok, err
}

// checkSeen compares the backend's superblock (epoch, nonce) with this state directory's
// record. Refused: an older superblock (rollback), a different one at the recorded epoch
// (replaced), and a newer one this writer neither wrote nor was about to write (another
// writer moved on: ErrBehind). A v1 record cannot tell the last case from a crash between
// the superblock and the record, so it refuses any newer superblock too.
func checkSeen(backendDir, stateDir string, epoch uint64, nonce []byte) error {
	rec, ok, err := readSeen(stateDir)
	if err != nil || !ok {
		return err
	}
	se := rec.Epoch
	switch {
	case epoch < se:
		return rolledBack(backendDir, stateDir, fmt.Sprintf("its superblock is from epoch %d but this machine's writer last wrote epoch %d", epoch, se))
	case epoch == se && !bytes.Equal(nonce, rec.Nonce):
		return fmt.Errorf("%w: the backend's superblock of epoch %d is not the one this machine's writer wrote (replaced by another writer or a copy)", ErrIntegrity, epoch)
	case epoch == se:
		return nil
	case rec.V2 && (epoch == se+1 || epoch == se+2) && bytes.Equal(nonce, rec.Next):
		// This writer wrote it and crashed before recording it. A writer's first epoch
		// may skip a number (nextEpoch).
		return nil
	}
	return fmt.Errorf("%w: the backend is at epoch %d, written by another writer after this state directory (%s) last synced epoch %d; starting would revert that writer's changes. To continue from the backend, run 'veil osync adopt --backend %s --state %s' (this state's unsynced changes are set aside, not applied)", ErrBehind, epoch, stateDir, se, backendDir, stateDir)
}

// writeSeen records the superblock the backend now holds and the nonce the next one
// will get.
func (w *Writer) writeSeen(epoch uint64, nonce []byte) error {
	w.nextNonce = randomBytes(superNonceLen)
	rec := seenRecord{Epoch: epoch, Nonce: nonce, Next: w.nextNonce, V2: true}
	if err := writeAtomic(filepath.Join(w.opts.StateDir, seenName), encodeSeen2(rec), !w.opts.UnsafeNoFsync); err != nil {
		return fmt.Errorf("record superblock: %w", err)
	}
	return nil
}
