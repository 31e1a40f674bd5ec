package storeserver

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// An upload's temporary file (DIR/tmp/up-*) is locked (flock) by the upload for as long as
// it needs the file, so a sweep (gc, fsck) tells a live upload's file from one a crash
// left, whichever process runs it: `veil store gc --dir DIR` beside a node serving DIR (a
// PostgreSQL store) sees the node's uploads as live. A crashed process's locks are gone
// with it.

// createUpload creates a fresh temporary file in dir and locks it. A sweep that took the
// file between its creation and the lock removed it: then another is made.
func createUpload(dir string) (*os.File, error) {
	for range 10 {
		f, err := os.CreateTemp(dir, "up-*")
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
	}
	return nil, errors.New("upload file: removed by a sweep as soon as made, ten times")
}

// staleUploads are the files in dir no upload holds.
func staleUploads(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if p := filepath.Join(dir, e.Name()); claimStale(p, false) {
			out = append(out, p)
		}
	}
	return out, nil
}

// claimStale reports whether no upload holds the file at p, and with remove removes it
// (under the lock: no upload can take it meanwhile), reporting whether it did.
func claimStale(p string, remove bool) bool {
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
