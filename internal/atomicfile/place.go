package atomicfile

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// PlaceNew puts the complete file tmp at path, failing with an error matching
// fs.ErrExist if path exists, atomically: no one sees path missing its content. It makes
// a hard link (atomic even on NFS), or where the file system has none (vfat, exFAT, many
// network and FUSE file systems: link(2) fails with EPERM, EOPNOTSUPP or ENOSYS) renames
// without replacing (RENAME_NOREPLACE). moved reports that tmp is gone (renamed); after a
// link the caller removes tmp. A file system with neither fails with EINVAL or ENOSYS
// (errors.Is with syscall.EINVAL or syscall.ENOSYS), which a caller holding its own lock
// may answer with a plain rename. It does not sync the directory.
func PlaceNew(tmp, path string) (moved bool, err error) {
	err = os.Link(tmp, path)
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
		return false, err
	}
	if err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE); err != nil {
		return false, &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return true, nil
}
