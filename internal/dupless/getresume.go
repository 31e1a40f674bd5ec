package dupless

import (
	"golang.org/x/sys/unix"
)

// A get of a stored folder into a DEST that does not exist makes DEST that folder; into
// an existing folder of another name it puts the folder inside it (intoDir, cp's rule). So
// an interrupted 'veil get big gb', run again, would nest big in the gb the first run
// created (found by a user walkthrough). The folder get creates therefore carries an
// extended attribute naming SRC until a run completes without an error; a run that finds
// it for the same SRC finishes that folder. A file system without user extended
// attributes keeps cp's rule alone.

const partialAttr = "user.veil.get-partial"

// markPartial marks local, a folder get just created for src, as not yet complete.
func markPartial(local, src string) {
	unix.Setxattr(local, partialAttr, []byte(src), 0) // best effort: see above
}

// isPartial reports whether local is a folder an unfinished get of src created.
func isPartial(local, src string) bool {
	buf := make([]byte, len(src)+1)
	n, err := unix.Getxattr(local, partialAttr, buf)
	return err == nil && string(buf[:n]) == src
}

// clearPartial removes the mark once a get into local completed.
func clearPartial(local string) {
	unix.Removexattr(local, partialAttr)
}
