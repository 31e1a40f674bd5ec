package dupless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Prune and history: a chunk stays while any record of any retained snapshot refers to it,
// and a kept version stays while any retained snapshot lists it.

// readCurrent reads the record object at encDir/objName itself (never a kept version),
// checked against the newest root, and returns it with its SHA-256.
func (c *Client) readCurrent(ctx context.Context, encDir, objName string) (*record, [32]byte, error) {
	b, err := c.recordBytes(ctx, encDir, objName, false)
	if err != nil {
		return nil, [32]byte{}, err
	}
	path := storage.Join(encDir, objName)
	r, err := c.keys.openRecord(b, path)
	if err != nil {
		return nil, [32]byte{}, err
	}
	if err := c.checkRecord(path, b); err != nil {
		return nil, [32]byte{}, err
	}
	return r, sha256.Sum256(b), nil
}

// historyChunks marks in used the chunks of every record version a retained snapshot
// lists that is not the object now at its path (current: path -> hash), and returns the
// kept-version names the snapshots list. A version that is not kept (replaced before veil
// kept versions) is counted, not an error; any other failure stops prune.
func (c *Client) historyChunks(ctx context.Context, current map[string][32]byte, used map[string]bool, res *PruneResult) (map[string]bool, error) {
	roots, err := c.loadRoots(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w (prune stops: it must see every snapshot)", err)
	}
	res.Snapshots = len(roots)
	listed := map[string]bool{}
	for _, root := range roots {
		for path, h := range root.Entries {
			name := hex.EncodeToString(h[:])
			if listed[name] {
				continue
			}
			listed[name] = true
			if cur, ok := current[path]; ok && cur == h || isDirMeta(path) {
				continue // counted by the walk, or a directory's record (no chunks)
			}
			r, err := c.keptRecord(ctx, h, path)
			if errors.Is(err, storage.ErrNotFound) {
				res.VersionsMissing++
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("%s in snapshot %d: %w (prune stops: it must see every record)", c.describe(path), root.Seq, err)
			}
			res.Versions++
			for _, ch := range r.Chunks {
				used[hex.EncodeToString(ch.Tag[:])] = true
			}
		}
	}
	return listed, nil
}

// pruneVersions deletes kept versions no retained snapshot lists, older than cutoff.
func (c *Client) pruneVersions(ctx context.Context, listed map[string]bool, cutoff time.Time, dryRun bool, res *PruneResult) error {
	prefixes, err := c.be.List(ctx, versionsDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, p := range prefixes {
		dir := storage.Join(versionsDir, p.Name)
		objs, err := c.be.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if listed[o.Name] || o.ModTime.IsZero() || o.ModTime.After(cutoff) {
				continue
			}
			if !dryRun {
				if err := c.be.Delete(ctx, dir, o.Name); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
			}
			res.VersionsRemoved++
			res.BytesRemoved += o.Size
		}
	}
	return nil
}

func isDirMeta(path string) bool {
	_, name := storage.Split(path)
	return name == dirMetaName
}
