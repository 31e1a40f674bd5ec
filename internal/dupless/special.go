package dupless

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Special files (FIFOs, character and block devices) are stored as metadata only, as
// restic does: a version 3 record of type 4 with the stat(2) mode (file type bits
// included) and the device number. get recreates them (devices need the privilege
// mknod(2) needs; without it that entry fails, the others arrive). Sockets are not stored:
// they mean something only to the process that listens on them.

// specialMode is the record mode of a FIFO or device: permission bits plus type bits.
func specialMode(m fs.FileMode) uint32 {
	u := unixMode(m)
	switch {
	case m&fs.ModeNamedPipe != 0:
		return u | modeFIFO
	case m&fs.ModeCharDevice != 0:
		return u | modeCharDev
	}
	return u | modeBlockDev
}

func (c *Client) putSpecial(ctx context.Context, t putTask, sum *Summary, run *putRun) error {
	r := &record{Type: typeSpecial, Mode: specialMode(t.info.Mode()), MTime: t.info.ModTime().UnixNano(), Rdev: localRdev(t.info)}
	return c.putMetaRecord(ctx, run, t, r, sum, func(s *Summary) { s.Special++ })
}

// localRdev is the device number a record of the local entry fi holds: a device's, else 0.
func localRdev(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode()&fs.ModeDevice != 0 {
		return uint64(st.Rdev)
	}
	return 0
}

// restoreSpecial recreates a FIFO or device at t.local: made under a temporary name beside
// it, then renamed into place (never through a link; an existing entry per mayReplace).
func (c *Client) restoreSpecial(t getTask, r *record, sum *Summary) error {
	if err := safeDir(t.root, filepath.Dir(t.local)); err != nil {
		return err
	}
	if err := c.mayReplace(t.local, r); err == errKept {
		sum.add(func(s *Summary) { s.Kept++ })
		return nil
	} else if err != nil {
		return err
	}
	perm := r.Mode & 0o7777
	tmp, err := makeTemp(filepath.Dir(t.local), func(p string) error {
		if r.Mode&modeTypeMask == modeFIFO {
			return unix.Mkfifo(p, perm)
		}
		return unix.Mknod(p, r.Mode&(modeTypeMask|0o7777), int(r.Rdev))
	})
	if err != nil {
		return fmt.Errorf("recreate %s: %w", specialKind(r.Mode), err)
	}
	os.Chmod(tmp, goMode(perm)) // the umask narrowed it
	mt := time.Unix(0, r.MTime)
	os.Chtimes(tmp, mt, mt)
	if err := os.Rename(tmp, t.local); err != nil {
		os.Remove(tmp)
		return err
	}
	sum.add(func(s *Summary) { s.Special++ })
	return nil
}

// specialKind names a special record's kind.
func specialKind(mode uint32) string {
	switch mode & modeTypeMask {
	case modeFIFO:
		return "FIFO"
	case modeCharDev:
		return "character device"
	}
	return "block device"
}

// specialGoMode is the fs.FileMode of a special record (for ls).
func specialGoMode(mode uint32) fs.FileMode {
	m := goMode(mode)
	switch mode & modeTypeMask {
	case modeFIFO:
		return m | fs.ModeNamedPipe
	case modeCharDev:
		return m | fs.ModeDevice | fs.ModeCharDevice
	}
	return m | fs.ModeDevice
}
