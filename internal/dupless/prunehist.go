package dupless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
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

// errNotListed: the newest root lists no record at the path (readListed).
var errNotListed = errors.New("not listed by the newest tree root")

// readListed reads, where readCurrent found ErrStale (the object at encDir/objName is not
// the record the newest root lists there), the version the root lists, as every reader
// takes it: from its kept copy (readRecord). Such an object is an unfinished command's: one
// that wrote it and died before publishing its root (a put that lost a record race to it
// kept the root's version first, recordcas.go), or, for check, which takes no lock, one
// still running. Found by review: check reported such a file as damaged and prune stopped
// on it for good, although the file reads as its snapshot lists it and running the
// surviving put again finds it unchanged (TestDeadOverwriteStopsNeitherPruneNorCheck).
// errNotListed if the root lists no record there; any other failure as readRecord's.
func (c *Client) readListed(ctx context.Context, encDir, objName string) (*record, [32]byte, error) {
	want, listed := c.rootHash(storage.Join(encDir, objName))
	if !listed {
		return nil, want, errNotListed
	}
	r, err := c.readRecord(ctx, encDir, objName)
	return r, want, err
}

// unfinishedChunks marks in used the chunks of the record object at encDir/objName, which
// no root lists (an unfinished command's): prune keeps them, as the command may still
// publish it (a lock taken over from a process that was only suspended), and they go once
// a later write of the path replaces it. An object that does not open under this key
// stops prune, as before.
func (c *Client) unfinishedChunks(ctx context.Context, encDir, objName string, used map[string]bool) error {
	b, err := c.getObjectNow(ctx, encDir, objName)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	r, err := c.keys.openRecord(b, storage.Join(encDir, objName))
	if err != nil {
		return err
	}
	for _, ch := range r.Chunks {
		used[hex.EncodeToString(ch.Tag[:])] = true
	}
	return nil
}

// unseenGone returns the plain paths of the records the newest root lists that a walk did
// not see (seen) and whose version the root lists is not kept either: the storage service
// deleted them. One the root lists whose kept copy reads (readRecord takes it from there,
// as every reader does) is an unfinished command's doing, an rm or mv that moved the record
// to its kept name and did not publish its root: found by review, check reported such a
// file deleted and prune stopped on it for good, and running the rm again cannot help (it
// no longer finds the file; TestDeadRemoveStopsNeitherPruneNorCheck).
func (c *Client) unseenGone(ctx context.Context, seen map[string]bool) ([]string, error) {
	var out []string
	for _, p := range c.rootPaths("") {
		if seen[p] {
			continue
		}
		dir, name := storage.Split(p)
		_, err := c.readRecord(ctx, dir, name)
		switch {
		case err == nil:
			continue
		case errors.Is(err, storage.ErrNotFound) || errors.Is(err, ErrStale) || isDamage(err):
			out = append(out, c.describe(p))
		default:
			return nil, err
		}
	}
	slices.Sort(out)
	return out, nil
}

// historyChunks marks in used the chunks of every record version a retained snapshot
// lists that is not the object now at its path (current: path -> hash), notes in tags the
// long names of every path a snapshot lists, and returns the kept-version names the
// snapshots list. A version that is not stored (lost, or replaced before veil kept
// versions: check reports it) is counted, not an error, as there is nothing of it to keep.
// A damaged one (its kept copy does not match its name, or does not open) is counted and
// named in res.Damaged: prune cannot know which chunks it refers to, so it goes on but
// deletes no chunk (Prune), until 'veil forget' drops the snapshots listing it. Found by
// review: prune stopped for good on such a version (TestDamagedVersionStopsNeitherPruneNorStats).
// Any other failure (a read that failed) stops prune.
func (c *Client) historyChunks(ctx context.Context, current map[string][32]byte, used, tags map[string]bool, res *PruneResult) (map[string]bool, []*treeRoot, error) {
	roots, err := c.loadRoots(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (prune stops: it must see every snapshot)", err)
	}
	res.Snapshots = len(roots)
	listed := map[string]bool{}
	for _, root := range roots {
		for path, h := range root.Entries {
			noteTags(tags, path)
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
			if isDamage(err) {
				res.VersionsDamaged++
				res.Damaged = append(res.Damaged, fmt.Sprintf("%s (snapshot %d)", c.describe(path), root.Seq))
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s in snapshot %d: %w (prune stops: it must see every record)", c.describe(path), root.Seq, err)
			}
			res.Versions++
			for _, ch := range r.Chunks {
				used[hex.EncodeToString(ch.Tag[:])] = true
			}
		}
	}
	return listed, roots, nil
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

// isDamage reports whether err says a record's bytes are damaged (not a failed read).
func isDamage(err error) bool { return errors.Is(err, ErrIntegrity) || errors.Is(err, ErrRecord) }

func isDirMeta(path string) bool {
	_, name := storage.Split(path)
	return name == dirMetaName
}
