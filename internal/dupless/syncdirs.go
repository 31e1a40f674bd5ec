package dupless

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/storage"
)

// Folders and exact names in local diffs and sync (sync.go): what a sync's dry run lists
// of folders, and whether a name is local by exactly that name.

// foldersAbove lists as added the folders above path that dirs (the stored folders) lacks.
func (c *Client) foldersAbove(dirs map[string]bool, path string) []Change {
	var out []Change
	for dir, _ := storage.Split(path); dir != ""; dir, _ = storage.Split(dir) {
		if enc, err := c.keys.encPath(dir); err == nil && !dirs[enc] {
			out = append(out, Change{Path: dir, Kind: "added", IsDir: true})
		}
	}
	return out
}

// compareDir compares the local folder local with the folder root stores at dest,
// encrypted enc (dirs: root's folders), as put decides whether to write its record:
// "added" when no folder is stored there, "metadata" when its record's mode or
// modification time differs from the local folder's or it has no record (an older veil's;
// put writes one either way). Found by the notes since session 13: a dry run did not
// list the folder records sync rewrote.
func (c *Client) compareDir(ctx context.Context, root *treeRoot, dirs map[string]bool, enc, local, dest string) (Change, bool) {
	ch := Change{Path: dest, Kind: "metadata", IsDir: true}
	if !dirs[enc] {
		ch.Kind = "added"
		return ch, true
	}
	rp := storage.Join(enc, dirMetaName)
	h, ok := root.Entries[rp]
	if !ok {
		return ch, true
	}
	fi, r, err := c.localAndRecord(ctx, local, rp, h)
	if err != nil {
		ch.Err = err.Error()
		return ch, true
	}
	return ch, r.Type != typeDir || r.Mode != unixMode(fi.Mode()) || r.MTime != fi.ModTime().UnixNano()
}

// lstatExact is os.Lstat of path, but only of an entry of exactly that name: on a file
// system that ignores case (vfat, exFAT, NTFS, an ext4 casefold folder, macOS's default)
// Lstat("Report.txt") finds "report.txt". Found by the notes since session 13: after a
// case-only rename there, sync took the old name for local again and kept both names.
// The folder is read only when Lstat finds something (rare: a name local again).
func lstatExact(path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(1024)
		for _, n := range names {
			if n == name {
				return fi, nil
			}
		}
		if errors.Is(err, io.EOF) { // not there by that name
			return nil, &fs.PathError{Op: "lstat", Path: path, Err: fs.ErrNotExist}
		} else if err != nil {
			return nil, err
		}
	}
}

// localAndRecord is the local file's Lstat and the record root lists at rp (hash h): what
// a comparison of the two needs.
func (c *Client) localAndRecord(ctx context.Context, local, rp string, h [32]byte) (fs.FileInfo, *record, error) {
	fi, err := os.Lstat(local)
	if err != nil {
		return nil, nil, err
	}
	r, err := c.recordIn(ctx, rp, h)
	return fi, r, err
}
