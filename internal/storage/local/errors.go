package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/veil-project/veil/internal/storage"
)

// fail is the error of op on the object (or folder) key: "op key: class (cause)", one
// line naming the object once. The file system's own error names the absolute path
// again ("get a/b: not found (open /store/a/b: no such file or directory)", found by the
// notes since session 13); its cause is kept without it, and a path other than the
// object's (a folder to make) is named below the store's root.
func (b *Backend) fail(op, key string, err error) error {
	shown := key
	if shown == "" {
		shown = "/" // the root folder
	}
	return fmt.Errorf("%s %s: %w", op, shown, b.cause(key, err))
}

// cause is err as fail words it: storage's class (mapErr), a full disk marked (noSpace),
// the file system's words without key's path (plain).
func (b *Backend) cause(key string, err error) error {
	return noSpace(mapErr(b.plain(key, err)))
}

// plainError is a file system error worded without the path it repeats; errors.Is and
// errors.As still see the original.
type plainError struct {
	text string
	err  error
}

func (e *plainError) Error() string { return e.text }
func (e *plainError) Unwrap() error { return e.err }

// plain words a file system error (*fs.PathError, *os.LinkError) by its cause alone when
// the path it names is key's file or the temporary file a Put of key writes, and as
// "op PATH: cause" with PATH below the root otherwise. Other errors are returned as they are.
func (b *Backend) plain(key string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	var op, path string
	var cause error
	switch {
	case errors.As(err, &pe):
		op, path, cause = pe.Op, pe.Path, pe.Err
	case errors.As(err, &le):
		op, path, cause = le.Op, le.New, le.Err
	default:
		return err
	}
	rel, rerr := filepath.Rel(b.root, path)
	rel = filepath.ToSlash(rel)
	switch {
	case rerr == nil && (rel == key || key == "" && rel == "." || strings.HasPrefix(rel, TempDirName+"/")):
		return &plainError{cause.Error(), err}
	case rerr == nil && rel != ".." && !strings.HasPrefix(rel, "../"):
		return &plainError{op + " " + rel + ": " + cause.Error(), err}
	}
	return err
}

// noSpace marks a full disk (ENOSPC, EDQUOT) as storage.ErrCannotStore, keeping the cause:
// no later Put can succeed either, so a client stops its run instead of failing (and
// retrying) every file in turn, as it does on the storage service's 507 no_space.
func noSpace(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %w", storage.ErrCannotStore, err)
	}
	return err
}

// mapErr turns filesystem errors into storage's error classes, the file system's words
// beside the class unless they say the same ("not found", "permission denied"). A missing
// path, or a path through a file, is ErrNotFound.
func mapErr(err error) error {
	var class error
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return storage.ErrNotFound
	case errors.Is(err, syscall.ENOTDIR):
		class = storage.ErrNotFound
	case errors.Is(err, syscall.EISDIR):
		class = storage.ErrIsDir
	case errors.Is(err, syscall.ENOTEMPTY), errors.Is(err, syscall.EEXIST):
		class = storage.ErrNotEmpty
	case errors.Is(err, fs.ErrPermission):
		class = storage.ErrPermission
	default:
		return err
	}
	if err.Error() == class.Error() {
		return class
	}
	return fmt.Errorf("%w (%v)", class, err)
}
