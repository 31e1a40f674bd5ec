package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// Temporary files that a sweep must tell from a crash's leftovers: the process writing one
// holds an flock on it for as long as it needs it (until its rename), and a sweep removes
// only files it can lock (ClaimStale). A crashed process's locks are gone with it, so a
// sweep in any process (a gc beside a serving node, a second opener of a directory store)
// leaves the files of writers in flight alone.

// CreateLocked creates a fresh temporary file in dir (os.CreateTemp's pattern) and locks
// it. A sweep that took the file between its creation and the lock removed it: then
// another is made, up to ten times.
func CreateLocked(dir, pattern string) (*os.File, error) {
	for range 10 {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			os.Remove(f.Name())
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		named, err2 := os.Stat(f.Name())
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return f, nil
		}
		f.Close()
		if err1 != nil {
			return nil, err1
		}
	}
	return nil, errors.New("temporary file: removed by a sweep as soon as made, ten times")
}

// ClaimStale reports whether no writer holds the file at p, and with remove removes it
// (under the lock: no writer can take it meanwhile), reporting whether it did.
func ClaimStale(p string, remove bool) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return false
	}
	return !remove || os.Remove(p) == nil
}
