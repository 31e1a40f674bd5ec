package dupless

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Overwrite says what get does with an entry that already exists where it restores one,
// as restic's restore --overwrite does. Whatever it says, get never writes through a
// symlink (a link in the way is replaced, not followed), never replaces a directory with
// a file, and never replaces a device, pipe or socket.
type Overwrite int

const (
	OverwriteAlways    Overwrite = iota // replace existing files and symlinks (the default)
	OverwriteIfChanged                  // replace unless size, modification time and mode already match the stored file (a symlink: its target)
	OverwriteNever                      // leave every existing entry as it is
)

// ParseOverwrite reads --overwrite's value.
func ParseOverwrite(s string) (Overwrite, error) {
	switch s {
	case "", "always":
		return OverwriteAlways, nil
	case "if-changed":
		return OverwriteIfChanged, nil
	case "never":
		return OverwriteNever, nil
	}
	return 0, fmt.Errorf("--overwrite %q: use always, if-changed or never", s)
}

func (o Overwrite) String() string {
	return [...]string{"always", "if-changed", "never"}[o]
}

// errKept marks an existing entry left in place by the overwrite policy: not an error.
var errKept = errors.New("kept the existing entry")

// ErrNotRegular refuses to replace what is neither a regular file nor a symlink (a device
// such as /dev/null, a named pipe, a socket) at a destination.
var ErrNotRegular = errors.New("exists and is not a regular file: not replaced")

// mayReplace decides, before a file or symlink restored from r is written at path, whether
// an existing entry there is replaced (nil), kept (errKept) or refused (an error).
func (c *Client) mayReplace(path string, r *record) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		return fmt.Errorf("exists and is a directory: not replaced")
	case !mode.IsRegular() && mode&fs.ModeSymlink == 0 &&
		!(r.Type == typeSpecial && mode.Type() == specialGoMode(r.Mode).Type()): // a FIFO over a FIFO is fine
		return fmt.Errorf("%w (a %s)", ErrNotRegular, fileKind(mode))
	}
	switch c.opts.Overwrite {
	case OverwriteNever:
		return errKept
	case OverwriteIfChanged:
		if same(path, fi, r) {
			return errKept
		}
	}
	return nil
}

// same reports whether the existing entry fi at path already is what r describes.
func same(path string, fi fs.FileInfo, r *record) bool {
	if r.Type == typeSpecial {
		return fi.Mode().Type() == specialGoMode(r.Mode).Type() && unixMode(fi.Mode()) == r.Mode&0o7777
	}
	if r.Type == typeSymlink {
		t, err := os.Readlink(path)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0 && t == r.Target
	}
	return fi.Mode().IsRegular() && uint64(fi.Size()) == r.Size && fi.ModTime().UnixNano() == r.MTime &&
		unixMode(fi.Mode()) == r.Mode
}

// fileDest is where get writes the stored file src that the user asked for at local: into
// local when it is an existing directory (a link to one counts: the user named it) or ends
// in a separator (a directory, made if missing), else
// local itself, which must not be a symlink (never followed, never replaced: /dev/stdout
// is one) nor a device, pipe or socket.
func fileDest(local, src string) (string, error) {
	if fi, err := os.Stat(local); err == nil && fi.IsDir() || strings.HasSuffix(local, string(os.PathSeparator)) {
		// An existing folder, or a DEST ending in / (a folder, made if missing, as rsync
		// does: found by a user walkthrough, 'get x.txt newdir/' made newdir, then failed).
		_, name := splitLast(src)
		local = strings.TrimRight(local, string(os.PathSeparator)) + string(os.PathSeparator) + name
	}
	fi, err := os.Lstat(local)
	if err != nil {
		return local, nil // missing (or unreadable: the write reports it)
	}
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		return "", fmt.Errorf("%s is a symlink: get neither follows nor replaces it (remove it first, or give - to write to standard output)", local)
	case mode.IsDir():
		return "", fmt.Errorf("%s is a directory", local)
	case !mode.IsRegular():
		return "", fmt.Errorf("%s %w (a %s; give - to write to standard output)", local, ErrNotRegular, fileKind(mode))
	}
	return local, nil
}

// dirDest checks the local directory a stored directory is retrieved into: missing, or a
// real directory (a symlink there is refused: its target would receive the files).
func dirDest(local string) error {
	fi, err := os.Lstat(local)
	if err != nil {
		return nil
	}
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink: get does not write through it (name the directory it points to instead)", local)
	case !mode.IsDir():
		return fmt.Errorf("%s exists and is not a directory", local)
	}
	return nil
}

// splitLast splits a slash-separated stored path into its parent and its last name.
func splitLast(p string) (string, string) {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return "", p
}

// intoDir is where get puts the stored directory src asked for at local. A missing local
// becomes the copy of src; so does an existing directory of the same name as src (get
// Documents ~/Documents updates it, it does not nest Documents/Documents); any other
// existing directory receives the copy inside it, as cp does, unless an unfinished get of
// src created it (getresume.go). The root ("") goes into local.
func intoDir(local, src string) string {
	if src == "" {
		return local
	}
	_, name := splitLast(src)
	fi, err := os.Stat(local)
	if err != nil || !fi.IsDir() || filepath.Base(filepath.Clean(local)) == name || isPartial(local, src) {
		return local
	}
	return filepath.Join(local, name)
}
