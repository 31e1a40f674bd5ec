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
// found on open): its epoch and nonce. The checkpoint alone cannot say it, because idle
// epochs skip the checkpoint, so the backend may be several epochs ahead of it; without
// this record the cloud could put back any superblock of those idle epochs, and the
// writer would reuse their epoch numbers (two authentic superblocks per epoch, which
// defeats the readers' rollback check by epoch number).
//
//	seen = version u8 (1) | epoch u64 | superblock nonce [24]     (33 bytes)
const (
	seenName    = "seen"
	seenVersion = 1
	seenLen     = 1 + 8 + 24
)

func encodeSeen(epoch uint64, nonce []byte) []byte {
	b := binary.BigEndian.AppendUint64([]byte{seenVersion}, epoch)
	return append(b, nonce...)
}

// readSeen returns the recorded epoch and nonce; ok is false when there is no record
// (a state directory from before this file existed, or a new one).
func readSeen(stateDir string) (epoch uint64, nonce []byte, ok bool, err error) {
	return readSeenFile(filepath.Join(stateDir, seenName))
}

// readSeenFile reads a record in the `seen` format (also a reader's reader-seen).
func readSeenFile(path string) (epoch uint64, nonce []byte, ok bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	if len(b) != seenLen || b[0] != seenVersion {
		return 0, nil, false, fmt.Errorf("%w: %s is not a version %d record of %d bytes", ErrFormat, path, seenVersion, seenLen)
	}
	return binary.BigEndian.Uint64(b[1:]), b[9:], true, nil
}

// checkSeen refuses a backend superblock older than the one this writer last saw, or a
// different one at the same epoch. A newer one is accepted: the writer may have crashed
// between writing the superblock and recording it.
func checkSeen(stateDir string, epoch uint64, nonce []byte) error {
	se, sn, ok, err := readSeen(stateDir)
	if err != nil || !ok {
		return err
	}
	switch {
	case epoch < se:
		return fmt.Errorf("%w: the backend's superblock is from epoch %d but this machine's writer last wrote epoch %d (backend rolled back?)", ErrIntegrity, epoch, se)
	case epoch == se && !bytes.Equal(nonce, sn):
		return fmt.Errorf("%w: the backend's superblock of epoch %d is not the one this machine's writer wrote (replaced by another writer or a copy)", ErrIntegrity, epoch)
	}
	return nil
}

// writeSeen records the superblock the backend now holds.
func (w *Writer) writeSeen(epoch uint64, nonce []byte) error {
	if err := writeAtomic(filepath.Join(w.opts.StateDir, seenName), encodeSeen(epoch, nonce), !w.opts.UnsafeNoFsync); err != nil {
		return fmt.Errorf("record superblock: %w", err)
	}
	return nil
}
