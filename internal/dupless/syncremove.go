package dupless

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/veil-project/veil/internal/storage"
)

// removeAll removes the stored entries gone lists (one per folder: coveredBy) and counts
// those it removed something of; the caller holds the lock. A folder's removal is what
// changes (the diff) lists below it, each file, then each folder once nothing else is in
// it; a file goes only as the diff saw it. Found by review: a folder removed whole took
// what another device stored in it after the diff, and what --exclude had left out of the
// diff; a file was removed whatever version another device had stored since.
func (c *Client) removeAll(ctx context.Context, gone, changes []Change) (n int, err error) {
	for _, g := range gone {
		var files, dirs []Change
		for _, ch := range changes {
			if ch.Kind == "removed" && (ch.Path == g.Path && ch.IsDir == g.IsDir || g.IsDir && strings.HasPrefix(ch.Path, g.Path+"/")) {
				if ch.IsDir {
					dirs = append(dirs, ch)
				} else {
					files = append(files, ch)
				}
			}
		}
		var removed atomic.Bool
		err := c.parallel(ctx, len(files), func(ctx context.Context, i int) error {
			ok, err := c.removeFile(ctx, files[i])
			if ok {
				removed.Store(true)
			}
			return err
		})
		if err != nil {
			return n, err
		}
		sort.Slice(dirs, func(i, j int) bool { return dirs[i].Path > dirs[j].Path }) // what a folder holds before it
		for _, d := range dirs {
			ok, err := c.removeEmptyDir(ctx, d.Path)
			if err != nil {
				return n, err
			}
			if ok {
				removed.Store(true)
			}
		}
		if removed.Load() {
			n++
		}
	}
	return n, nil
}

// removeFile removes the stored file (or symlink, FIFO, device) ch lists, if it is still
// the version the diff saw; its record stays in the snapshots.
func (c *Client) removeFile(ctx context.Context, ch Change) (bool, error) {
	encDir, encName, err := c.encFile(ch.Path)
	if err != nil {
		return false, err
	}
	if h, listed := c.rootHash(storage.Join(encDir, encName+keySuffix)); !listed || ch.saw == nil || h != *ch.saw {
		return false, nil // gone, or stored anew since the diff: not what the diff saw
	}
	damaged, err := c.deleteRecord(ctx, encDir, encName+keySuffix)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, fmt.Errorf("remove %s: %w", ch.Path, err)
	}
	if damaged {
		c.log.Warn("removed a damaged record; it was not kept as a version ('veil check' names the version lost)", "path", ch.Path)
	}
	return true, nil
}

// removeEmptyDir removes the stored folder path (its record and its storage directory)
// unless something is still in it.
func (c *Client) removeEmptyDir(ctx context.Context, path string) (bool, error) {
	enc, err := c.keys.encPath(path)
	if err != nil {
		return false, err
	}
	entries, err := c.be.List(ctx, enc)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("remove %s/: %w", path, err)
	}
	for _, e := range entries {
		if e.Name != dirMetaName {
			return false, nil // kept: not ours to remove
		}
	}
	damaged, err := c.deleteRecord(ctx, enc, dirMetaName)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, fmt.Errorf("remove %s/: %w", path, err)
	}
	if damaged {
		c.log.Warn("removed a damaged record; it was not kept as a version ('veil check' names the version lost)", "folder", path)
	}
	dir, name := storage.Split(enc)
	if err := c.be.Delete(ctx, dir, name); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, fmt.Errorf("remove %s/: %w", path, err)
	}
	return true, nil
}
