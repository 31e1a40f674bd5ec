package dupless

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Long names and prune (docs/design.md, "Long names"). Prune deletes the name object of a
// long name when no path it saw holds the tag (its walk: every record and directory stored,
// finished or not) nor any path of a retained snapshot (every root, hence every kept version
// a reader can reach), and the object is older than prune's grace by the storage's clock, as
// for chunks. No record a command acknowledges then points at a deleted name object:
//
//   - Every command writes the name objects of a path before writing under it, also when
//     they exist (storeLongNames): the object's time is the last use, as a chunk's is.
//   - A command under the lock (put, mkdir, mv, rm, sync) excludes prune, so prune sees
//     every record it wrote; its writes after the lock was taken over as abandoned (a
//     process suspended past the lock's staleness) are covered by the grace, as its
//     chunks are: a name object it wrote and no record yet uses is young. The client
//     writes each name object once per command (beginChangesFrom forgets them).
//   - A lock-free put carries the name objects in its one batch (commitLockless), with
//     the condition that prune's mark is absent: committed before the mark, prune reads
//     the root that lists its record; after prune, the batch writes the objects itself,
//     whatever prune deleted. Without them in the batch, a put that saw the object before
//     prune deleted it, and committed after, would point at nothing
//     (TestLocklessLongNamePutRacesPrune).

// noteTags adds to tags the long-name tags among the components of the storage path p.
func noteTags(tags map[string]bool, p string) {
	if !strings.Contains(p, longTagPrefix) {
		return
	}
	for _, part := range strings.Split(p, "/") {
		if tag, _ := cutSuffix(part, keySuffix); isLongTag(tag) {
			tags[tag] = true
		}
	}
}

// pruneNames deletes the name objects whose tags are not in tags, older than cutoff.
func (c *Client) pruneNames(ctx context.Context, tags map[string]bool, cutoff time.Time, dryRun bool, res *PruneResult) error {
	objs, err := c.be.List(ctx, namesDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.IsDir || !isLongTag(o.Name) || tags[o.Name] || o.ModTime.IsZero() || o.ModTime.After(cutoff) {
			continue
		}
		if !dryRun {
			if err := c.be.Delete(ctx, namesDir, o.Name); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
		}
		res.NamesRemoved++
		res.BytesRemoved += o.Size
	}
	return nil
}
