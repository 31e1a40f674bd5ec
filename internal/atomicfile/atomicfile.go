package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Write replaces path with data (mode perm). It refuses to replace anything but a regular
// file: renaming over /dev/null or a symlink would replace the device or the link itself.
// Without sync it skips both fsyncs: a machine crash may then lose the write or leave a
// torn file, a process crash still cannot tear it. Only for benchmarks, tests, and files
// whose reader detects a torn or old copy and rebuilds it (the put cache).
func Write(path string, data []byte, perm os.FileMode, sync bool) error {
	if err := CheckReplaceable(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempMark+"*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing left to remove
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return SyncDir(dir)
}

// CheckReplaceable fails if path exists and is not a regular file (Write would refuse
// it), so a caller can refuse before doing the work whose result it would write.
func CheckReplaceable(path string) error {
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file", path)
	}
	return nil
}

// tempMark separates a temporary file's target name from CreateTemp's random digits.
const tempMark = ".tmp"

// IsTemp reports whether name (a base name) is one of Write's temporary files, which a
// process killed mid-write leaves behind.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempMark)
	if !strings.HasPrefix(name, ".") || i < 1 || i+len(tempMark) == len(name) {
		return false
	}
	for _, c := range name[i+len(tempMark):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MkdirAll is os.MkdirAll that makes each directory it creates durable: a new directory's
// entry lives in its parent, so every parent that gained one is fsync'ed (a crash after
// MkdirAll returns cannot lose the directory, nor the files later written and synced in it).
func MkdirAll(path string, perm os.FileMode) error {
	path = filepath.Clean(path)
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: path, Err: syscall.ENOTDIR}
		}
		return nil
	}
	parent := filepath.Dir(path)
	if parent != path {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(path, perm); err != nil {
		if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
			return nil // made meanwhile by someone else (who syncs it)
		}
		return err
	}
	return SyncDir(parent)
}
