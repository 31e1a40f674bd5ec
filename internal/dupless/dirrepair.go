package dupless

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Folders without a record. Before session 14 the folders veil made along the way (a put's
// destination and its parents, mkdir's parents, a mv's new parents) got none: ls -l shows
// them as d?????????, and get restores them 0700. Check counts them (not as damage), and
// RecordFolders (veil check --repair) gives each the record veil now gives such a folder
// (writeFolderRecord: 0755, and the time of the repair: when it was made is not stored).

// FolderRepair is what RecordFolders did.
type FolderRepair struct {
	Recorded []string `json:"recorded"` // folders given a record (plain paths)
	Pending  []string `json:"pending"`  // folders without one that a pending mv covers: left as they are
}

// RecordFolders gives every folder of the newest tree that has no record the record veil
// gives a folder it makes on its own. It never writes over a record: a folder the root lists
// one for, or whose record object is stored although no root lists it (an unfinished
// command's, which check reports), is left as it is; so is a folder a pending mv covers
// (until 'veil mv --resume' finishes it). It runs alone, as mv and rm do (lockRemoving): no
// other command writes a folder's record between its look and its write (recordcas.go would
// then keep the other's as a version and write over it).
func (c *Client) RecordFolders(ctx context.Context) (_ *FolderRepair, err error) {
	res := &FolderRepair{Recorded: []string{}, Pending: []string{}}
	unlock, err := c.lockRemoving(ctx)
	if err != nil {
		return res, err
	}
	defer unlockInto(&err, unlock)
	marks, err := c.pending(ctx)
	if err != nil {
		return res, err
	}
	var encs, rels []string
	err = c.walk(ctx, "", false, func(rel string, isDir bool, encDir, _ string) error {
		if !isDir {
			return nil
		}
		if has, err := c.folderHasRecord(ctx, encDir); err != nil || has {
			return err
		}
		for _, m := range marks {
			if !m.Settled && m.covers(rel) {
				res.Pending = append(res.Pending, rel)
				return nil
			}
		}
		encs, rels = append(encs, encDir), append(rels, rel)
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	now := time.Now()
	written := make([]bool, len(encs))
	err = c.parallel(ctx, len(encs), func(ctx context.Context, i int) error {
		if err := c.writeFolderRecord(ctx, encs[i], now); err != nil {
			return err
		}
		written[i] = true
		return nil
	})
	for i, ok := range written {
		if ok {
			res.Recorded = append(res.Recorded, rels[i])
		}
	}
	sort.Strings(res.Recorded)
	sort.Strings(res.Pending)
	return res, err
}

// folderHasRecord reports whether the folder enc has a record: listed by the command's root,
// or stored although no root lists it.
func (c *Client) folderHasRecord(ctx context.Context, enc string) (bool, error) {
	if has, err := c.dirRecorded(ctx, enc); err != nil || has {
		return has, err
	}
	_, err := c.be.Stat(ctx, enc, dirMetaName)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
