package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
// a lock taken on a file removed that way is retaken on the new one. The wait ends with
// ctx (ctx.Err()): the flock goes on in the background and is dropped as soon as it is
// taken. Found by the session 17 review: a command waiting for a lock another process
// held (stopped mid-commit, or on a stalled network filesystem) ignored Ctrl-C.
func (b *Backend) lock(ctx context.Context) (unlock func(), err error) {
	// Uncontended, the usual case: taken here, without a goroutine per commit.
	if unlock, err := b.lockFile(syscall.LOCK_EX | syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		if err != nil {
			return nil, lockFailed(err)
		}
		return unlock, nil
	}
	type taken struct {
		unlock func()
		err    error
	}
	got := make(chan taken, 1)
	go func() {
		unlock, err := b.lockFile(syscall.LOCK_EX)
		got <- taken{unlock, err}
	}()
	select {
	case t := <-got:
		if t.err != nil {
			return nil, lockFailed(t.err)
		}
		return t.unlock, nil
	case <-ctx.Done():
		go func() {
			if t := <-got; t.unlock != nil {
				t.unlock()
			}
		}()
		return nil, ctx.Err()
	}
}

// lockFile is lock with the file system's own errors (lockFailed words them); how is
// flock(2)'s operation (with LOCK_NB, a lock held elsewhere is EWOULDBLOCK).
func (b *Backend) lockFile(how int) (unlock func(), err error) {
	p := filepath.Join(b.tmp, lockName)
	for range 10 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), how); err != nil {
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
	return nil, errors.New("removed as soon as locked, ten times")
}

// lockFailed words a failure to take the commit lock: it names the lock file, and keeps
// only the classes that say the same of any commit (a permission, a full disk). Found by
// the session 17 review: the file system's error was worded as the object's, so with
// .veil-tmp removed while the store was open a Delete or MoveMatch of a stored object said
// "not found" (rm takes that for a record already gone and its root drops it), and with
// the lock file a directory every commit said "is a directory" of the object it wrote.
func lockFailed(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("commit lock %s/%s: %w", TempDirName, lockName, err)
	}
	return fmt.Errorf("commit lock %s/%s: %v", TempDirName, lockName, err)
}
