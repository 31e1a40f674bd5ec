package storage

import (
	"fmt"
	"strings"
)

// MaxNameLen is the longest name component a backend must accept (bytes).
const MaxNameLen = 255

// CheckName validates one path component.
func CheckName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: name longer than %d bytes", ErrInvalidName, MaxNameLen)
	case strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%w: %q contains '/' or NUL", ErrInvalidName, name)
	}
	return nil
}

// CheckDir validates a directory path ("" is the root).
func CheckDir(dir string) error {
	if dir == "" {
		return nil
	}
	for _, c := range strings.Split(dir, "/") {
		if err := CheckName(c); err != nil {
			return fmt.Errorf("directory %q: %w", dir, err)
		}
	}
	return nil
}

// CheckPath validates a directory and a name in it.
func CheckPath(dir, name string) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	return CheckName(name)
}

// Join returns dir/name, or name when dir is the root.
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// Split is the inverse of Join: it splits a path into its directory and last component.
func Split(path string) (dir, name string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}
