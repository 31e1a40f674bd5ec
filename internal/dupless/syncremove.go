package dupless

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// removeAll removes the stored entries gone lists (one per folder: coveredBy) and counts
// them; the caller holds the lock. A folder's removal is what changes (the diff) lists
// below it, each file, then each folder once nothing else is in it: found by review, a
// folder removed whole took what another device stored in it after the diff, and what
// --exclude had left out of the diff.
func (c *Client) removeAll(ctx context.Context, gone, changes []Change) (n int, err error) {
	for _, g := range gone {
		var files, dirs []string
		for _, ch := range changes {
			if ch.Kind == "removed" && (ch.Path == g.Path && ch.IsDir == g.IsDir || g.IsDir && strings.HasPrefix(ch.Path, g.Path+"/")) {
				if ch.IsDir {
					dirs = append(dirs, ch.Path)
				} else {
					files = append(files, ch.Path)
				}
			}
		}
		if err := c.parallel(ctx, len(files), func(ctx context.Context, i int) error { return c.removeFile(ctx, files[i]) }); err != nil {
			return n, err
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs))) // what a folder holds before it
		for _, d := range dirs {
			if err := c.removeEmptyDir(ctx, d); err != nil {
				return n, err
			}
		}
		n++
	}
	return n, nil
}

// removeFile removes the stored file (or symlink, FIFO, device) path; its record stays in
// the snapshots.
func (c *Client) removeFile(ctx context.Context, path string) error {
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return err
	}
	if err := c.deleteRecord(ctx, encDir, encName+keySuffix); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// removeEmptyDir removes the stored folder path (its record and its storage directory)
// unless something is still in it.
func (c *Client) removeEmptyDir(ctx context.Context, path string) error {
	enc, err := c.keys.encPath(path)
	if err != nil {
		return err
	}
	entries, err := c.be.List(ctx, enc)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove %s/: %w", path, err)
	}
	for _, e := range entries {
		if e.Name != dirMetaName {
			return nil // kept: not ours to remove
		}
	}
	if err := c.deleteRecord(ctx, enc, dirMetaName); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("remove %s/: %w", path, err)
	}
	dir, name := storage.Split(enc)
	if err := c.be.Delete(ctx, dir, name); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("remove %s/: %w", path, err)
	}
	return nil
}
