package dupless

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// A stored file and a stored folder never share a name: a folder is never created where
// a file is stored (put --to, mkdir, mv), nor a file where a folder is (putOther, putFile).
// Stores written before that rule may hold both; commands then make the user say which
// (NAME/ for the folder).

// ErrNotFolder is a path that has to be a stored folder and is not.
var ErrNotFolder = errors.New("not a stored folder")

// NotFolderError is NeedFolder's refusal (errors.Is ErrNotFolder): Path is a stored file,
// or nothing is stored there.
type NotFolderError struct {
	Path   string
	IsFile bool
}

func (e *NotFolderError) Error() string {
	if e.IsFile {
		return e.Path + " is a stored file: " + ErrNotFolder.Error()
	}
	return e.Path + " does not exist in storage: " + ErrNotFolder.Error()
}

// Is makes a NotFolderError ErrNotFolder.
func (e *NotFolderError) Is(target error) bool { return target == ErrNotFolder }

// noFileOnPath fails when path or one of its parents is stored as a file or symlink, so a
// folder made at path would share its name with a file.
func (c *Client) noFileOnPath(ctx context.Context, path string) error {
	folders, err := c.folderRecords(path)
	if err != nil {
		return err
	}
	for _, f := range folders {
		if _, err := c.be.Stat(ctx, f.encDir, f.objName); err == nil {
			return fmt.Errorf("%s is a stored file: a folder cannot have its name", f.path)
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return nil
}

// errBothKinds is a name stored both as a file and as a folder ('veil check' reports it),
// with the ways to keep one.
func errBothKinds(path string) error {
	return fmt.Errorf("stored both as a file and as a folder (an older veil's put stored a folder's entries below a file of its name): 'veil sync' of the local folder keeps what is there, or 'veil rm -r %s/' removes the folder and keeps the file", path)
}

// folderRecord is where the record of a file at path (a folder of a destination) would be.
type folderRecord struct{ path, encDir, objName string }

// folderRecords lists path and each of its parents, outermost first, with where a file's
// record of that name would be.
func (c *Client) folderRecords(path string) ([]folderRecord, error) {
	var out []folderRecord
	p := ""
	for _, name := range strings.Split(cleanPath(path), "/") {
		if name == "" {
			continue
		}
		p = joinPath(p, name)
		encDir, encName, err := c.encFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, folderRecord{p, encDir, encName + keySuffix})
	}
	return out, nil
}

// NeedFolder fails unless path is the root or a stored folder (put's last-argument
// destination: cp's rule, a destination that does not exist is a mistake, not an order).
func (c *Client) NeedFolder(ctx context.Context, path string) error {
	path = cleanPath(path)
	if path == "" {
		return nil
	}
	isFile, isDir, err := c.kinds(ctx, path)
	switch {
	case err != nil:
		return err
	case isDir:
		return nil
	case isFile:
		return &NotFolderError{Path: path, IsFile: true}
	}
	return &NotFolderError{Path: path}
}

// kinds tells whether path is stored as a file (or symlink) and whether as a folder.
func (c *Client) kinds(ctx context.Context, path string) (isFile, isDir bool, err error) {
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return false, false, err
	}
	if _, err := c.be.Stat(ctx, encDir, encName+keySuffix); err == nil {
		isFile = true
	} else if !errors.Is(err, storage.ErrNotFound) {
		return false, false, err
	}
	if fi, err := c.be.Stat(ctx, encDir, encName); err == nil && fi.IsDir {
		isDir = true
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, false, err
	}
	return isFile, isDir, nil
}

// removeKind is what rm removes at path: typeDir or typeFile. A trailing slash (NAME/)
// asks for the folder only; a name stored both as a file and as a folder (possible in
// stores written before the rule above) must be told apart that way.
func (c *Client) removeKind(ctx context.Context, raw string) (int, error) {
	path := cleanPath(raw)
	if path == "" {
		return typeDir, nil
	}
	isFile, isDir, err := c.kinds(ctx, path)
	if err != nil {
		return 0, err
	}
	folderOnly := strings.HasSuffix(raw, "/")
	switch {
	case folderOnly && isDir:
		return typeDir, nil
	case folderOnly && isFile:
		return 0, fileWithSlash(path)
	case isFile && isDir:
		return 0, fmt.Errorf("%s is stored both as a file and as a folder: say %s/ for the folder; the file goes once the folder is gone", path, path)
	case isDir:
		return typeDir, nil
	case isFile:
		return typeFile, nil
	}
	return 0, fmt.Errorf("%s: %w", path, storage.ErrNotFound)
}

// fileWithSlash is the error of a command given NAME/ (a folder) where NAME is a stored
// file: rm, ls and cat say it alike (ls and cat took the file).
func fileWithSlash(path string) error {
	return fmt.Errorf("%s is a stored file, not a folder (drop the trailing /)", path)
}
