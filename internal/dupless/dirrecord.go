package dupless

import (
	"context"
	"errors"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/veil-project/veil/internal/storage"
)

// implicitDirMode is the mode of a folder veil creates without being asked to: a folder of
// a mkdir's, a put's (--to) or a mv's destination that did not exist. It is what mkdir
// gives a folder; its time is when it was created (docs/formats/key-record.md).
const implicitDirMode = 0o755

// recordFolders gives each folder of path that has no record one (implicitDirMode, now):
// path's parents, and path itself with self. Found by review: such folders had none, so
// get restored them 0700, ls --json showed mode 0 and year 1, and ls -l d?????????. The
// records are written at once, and beside them the writes in with (mkdir's own record), so
// the batch queue sends them together.
func (c *Client) recordFolders(ctx context.Context, path string, self bool, with ...func(context.Context) error) error {
	missing, err := c.unrecordedFolders(ctx, path, self)
	if err != nil {
		return err
	}
	now := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for _, w := range with {
		g.Go(func() error { return w(gctx) })
	}
	for _, enc := range missing {
		g.Go(func() error { return c.writeFolderRecord(gctx, enc, now) })
	}
	return g.Wait()
}

// writeFolderRecord writes the record veil gives a folder it made without being asked to
// (implicitDirMode, made at now) for the folder enc (an encrypted path): recordFolders's,
// and check --repair's for the folders an older veil made so (RecordFolders). A record
// another command gave the folder meanwhile (a put of it from disk, a mkdir) is kept and
// taken as this command's (keepOthers), on a backend with match conditions.
func (c *Client) writeFolderRecord(ctx context.Context, enc string, now time.Time) error {
	_, err := c.writeRecordAs(ctx, enc, dirMetaName, &record{Type: typeDir, Mode: implicitDirMode, MTime: now.UnixNano()}, nil, true)
	return err
}

// unrecordedFolders returns the encrypted paths of the folders of path (path's parents,
// and path with self) that have no record, by the command's root (the storage service's
// answer when there is none).
func (c *Client) unrecordedFolders(ctx context.Context, path string, self bool) ([]string, error) {
	path = cleanPath(path)
	if path == "" {
		return nil, nil
	}
	parts := strings.Split(path, "/")
	if !self {
		parts = parts[:len(parts)-1]
	}
	var missing []string
	for i := 1; i <= len(parts); i++ {
		enc, err := c.keys.encPath(strings.Join(parts[:i], "/"))
		if err != nil {
			return nil, err
		}
		has, err := c.dirRecorded(ctx, enc)
		if err != nil {
			return nil, err
		}
		if !has {
			missing = append(missing, enc)
		}
	}
	return missing, nil
}

// dirRecorded reports whether the folder enc has a record: written by this command, or
// listed by its root; without a root (an older veil's namespace), stored.
func (c *Client) dirRecorded(ctx context.Context, enc string) (bool, error) {
	p := storage.Join(enc, dirMetaName)
	c.view.mu.Lock()
	d, changed := c.view.delta[p]
	root := c.view.root
	c.view.mu.Unlock()
	switch {
	case changed:
		return d != nil, nil
	case root != nil:
		_, listed := root.Entries[p]
		return listed, nil
	}
	_, err := c.be.Stat(ctx, enc, dirMetaName)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
