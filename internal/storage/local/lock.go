package local

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the file in TempDirName whose flock every commit holds: a Put's rename, a
// Delete, a Move, the check-and-rename of MoveMatch and the checks-and-renames of
// PutBatch. The conditions are sound only because nothing else can replace, remove or move
// an object between their check and their commit, in this process or in another one
// opening the same directory. The file is
// never removed (New skips it): a lock on an unlinked file would exclude nobody.
const lockName = "lock"

// lock takes the store's commit lock, blocking until it is free, and returns its release.
// Each call opens the file anew: flocks of two open files exclude each other even within
// one process, so two goroutines or two Backends on one directory are serialised too.
// A veil older than session 17 removed unheld files in TempDirName when it opened a store;
// a lock taken on a file removed that way is retaken on the new one.
func (b *Backend) lock() (unlock func(), err error) {
	p := filepath.Join(b.tmp, lockName)
	for range 10 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(p)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return func() { f.Close() }, nil // closing the file releases its flock
		}
		f.Close()
		if err1 != nil {
			return nil, err1
		}
	}
	return nil, errors.New("lock file: removed as soon as locked, ten times")
}
