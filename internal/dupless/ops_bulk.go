package dupless

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/veil-project/veil/internal/storage"
)

// Bulk namespace changes (mv and rm -r of a folder) cost a few storage round trips per
// file; they run Options.Jobs files at a time. Each file's own steps keep their order
// (mv writes the new record before it removes the old one), so an interrupted command
// leaves every file readable under one of its two names, as a one-at-a-time run would; the
// tree root is published once, when the command ends (publish.go).

// parallel runs fn for 0..n-1 on up to c.opts.Jobs goroutines. The first error cancels
// the context of the others, no new index is started, and it is returned once all
// started calls have returned.
func (c *Client) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, c.opts.Jobs))
	for i := 0; i < n; i++ {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, i) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// removeTree deletes everything below encDir, then encDir itself: a folder's records in
// parallel, then its subfolders one after another, then the folder (a storage service
// refuses to delete a folder that is not empty, so nothing is lost if it is interrupted).
func (c *Client) removeTree(ctx context.Context, encDir string, sum *Summary) error {
	entries, err := c.be.List(ctx, encDir)
	if err != nil {
		return c.inFolder(encDir, err)
	}
	var records []storage.Info
	for _, e := range entries {
		if e.Name != dirMetaName {
			if _, _, err := c.plainName(e); err != nil {
				if !errors.Is(err, ErrLongNameMissing) {
					err = errForeignEntry
				}
				return fmt.Errorf("%w; left in place", c.unreadableEntry(encDir, e.Name, err))
			}
		}
		if e.IsDir {
			if err := c.removeTree(ctx, storage.Join(encDir, e.Name), sum); err != nil {
				return err
			}
			continue
		}
		records = append(records, e)
	}
	var mu sync.Mutex
	err = c.parallel(ctx, len(records), func(ctx context.Context, i int) error {
		e := records[i]
		damaged, err := c.deleteRecord(ctx, encDir, e.Name)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		mu.Lock()
		if damaged {
			sum.Damaged++
		}
		mu.Unlock()
		if _, ok := cutSuffix(e.Name, keySuffix); ok {
			mu.Lock()
			sum.Files++
			mu.Unlock()
			c.event(e.Name, nil) // progress of a long rm -r
		}
		return nil
	})
	if err != nil {
		return err
	}
	sum.Dirs++
	dir, name := storage.Split(encDir)
	return c.be.Delete(ctx, dir, name)
}

// PathResult is the outcome of one path of a command given several (rm, mkdir): Err is
// that path's failure, nil when it went through; Summary counts what rm removed of it.
type PathResult struct {
	Path    string
	Summary *Summary
	Err     error
}

// RemoveEach removes each of paths as Remove does, as one command: one lock, and one tree
// root (one snapshot) published for all of them when it ends. A path that fails does not
// stop the others (as GNU rm carries on); each path's outcome is in the results, in order.
// err is the command's own failure (the lock, publishing the root, an interruption: the
// paths not attempted then have no result). Found by a user walkthrough: 'veil rm a b c'
// made one snapshot per path and stopped at the first that failed.
func (c *Client) RemoveEach(ctx context.Context, paths []string, recursive bool) (_ []PathResult, err error) {
	unlock, err := c.lockRemoving(ctx)
	if err != nil {
		return nil, err
	}
	defer unlockInto(&err, unlock)
	return eachPath(ctx, paths, func(p string) (*Summary, error) { return c.removeOne(ctx, p, recursive) })
}

// MkdirEach creates each of paths as Mkdir does, as one command (RemoveEach).
func (c *Client) MkdirEach(ctx context.Context, paths []string) (_ []PathResult, err error) {
	unlock, err := c.lock(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlockInto(&err, unlock)
	return eachPath(ctx, paths, func(p string) (*Summary, error) { return &Summary{}, c.mkdirChecked(ctx, p) })
}

// eachPath runs fn on every path, in order, until ctx ends.
func eachPath(ctx context.Context, paths []string, fn func(string) (*Summary, error)) ([]PathResult, error) {
	out := make([]PathResult, 0, len(paths))
	for _, p := range paths {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		sum, err := fn(p)
		out = append(out, PathResult{Path: p, Summary: sum, Err: err})
	}
	return out, ctx.Err()
}
