package dupless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/words"
)

// Local diff and mirroring (veil diff --local, veil sync): the stored folder made exactly
// the local one. What sync removes stays in the snapshots (history.go).

// DiffLocal lists how the local folder local differs from the stored folder path ("" for
// the root) as this client sees it (the newest tree, or a pinned snapshot): "added" is
// only local, "removed" only stored, "modified" a file whose size, modification time or
// mode differs (put's quick check: content is not read) or a symlink whose target
// differs, "metadata" a symlink whose time differs, or a folder (path itself too) whose
// mode or time differs from its record or that has none (compareDir). A FIFO or device is
// "modified" when its kind or device number differs and "metadata" when its mode or time
// does. Entries matching Options.Exclude are left out on both sides, and local sockets,
// which put does not store (cannotStore).
func (c *Client) DiffLocal(ctx context.Context, local, path string) ([]Change, error) {
	return c.diffLocal(ctx, local, path, false)
}

// diffLocal is DiffLocal; with above it also lists as added the folders above path that
// are not stored, which a put of local creates (sync's dry run lists what sync does).
func (c *Client) diffLocal(ctx context.Context, local, path string, above bool) ([]Change, error) {
	path = cleanPath(path)
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	local, err := localFolder(local)
	if err != nil {
		return nil, err
	}
	c.view.mu.Lock()
	root := c.view.root
	c.view.mu.Unlock()
	if root == nil {
		root = &treeRoot{Entries: map[string][32]byte{}}
	}
	under, err := c.underPath(path)
	if err != nil {
		return nil, err
	}
	dirs := dirSet(root)
	var out []Change
	seen := map[string]bool{}
	if enc, err := c.keys.encPath(path); err == nil && enc != "" {
		seen[enc+"/"] = true // the folder itself
	}
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		if rel == "." {
			// The folder itself, which put stores too (not the root: put never does).
			if enc, err := c.keys.encPath(path); err == nil && enc != "" {
				if ch, ok := c.compareDir(ctx, root, dirs, enc, p, path); ok {
					out = append(out, ch)
				}
				if above && !dirs[enc] {
					out = append(out, c.foldersAbove(dirs, path)...)
				}
			}
			return nil
		}
		rel = filepath.ToSlash(rel)
		if c.excluded(d.Name(), rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if cannotStore(d.Type()) {
			return nil // a socket: put does not store it either
		}
		dest := joinPath(path, rel)
		if d.IsDir() {
			enc, err := c.keys.encPath(dest)
			if err != nil {
				out = append(out, Change{Path: dest, Kind: "added", IsDir: true, Err: err.Error()})
				return filepath.SkipDir
			}
			seen[enc+"/"] = true
			if ch, ok := c.compareDir(ctx, root, dirs, enc, p, dest); ok {
				out = append(out, ch)
			}
			return ctx.Err()
		}
		ch, ok := c.compareLocal(ctx, root, p, dest, seen)
		if ok {
			out = append(out, ch)
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	for rp, h := range root.Entries {
		if under(rp) && !isDirMeta(rp) && !seen[rp] && !c.excludedStored(c.describe(rp), path) {
			out = append(out, Change{Path: c.describe(rp), Kind: "removed", saw: &h})
		}
	}
	for d := range dirs {
		if under(d+"/") && !seen[d+"/"] && !c.excludedStored(c.plainDir(d), path) {
			out = append(out, Change{Path: c.plainDir(d), Kind: "removed", IsDir: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// localFolder checks that local is a folder and returns it with a trailing separator when
// it is a symlink to one, so that the walks (diff's and put's) go into the folder, stored
// under the link's name. Found by review: they stopped at the link, so sync of a linked
// ~/Documents listed everything stored as removed and stored the link instead.
func localFolder(local string) (string, error) {
	fi, err := os.Stat(local)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder", local)
	}
	if li, err := os.Lstat(local); err == nil && li.Mode()&fs.ModeSymlink != 0 {
		return local + string(filepath.Separator), nil
	}
	return local, nil
}

// compareLocal compares one local file or symlink with what root stores at dest.
func (c *Client) compareLocal(ctx context.Context, root *treeRoot, local, dest string, seen map[string]bool) (Change, bool) {
	ch := Change{Path: dest, Kind: "modified"}
	encDir, encName, err := c.encFile(dest)
	if err != nil {
		ch.Kind, ch.Err = "added", err.Error()
		return ch, true
	}
	rp := storage.Join(encDir, encName+keySuffix)
	seen[rp] = true
	h, stored := root.Entries[rp]
	if !stored {
		ch.Kind = "added"
		return ch, true
	}
	fi, r, err := c.localAndRecord(ctx, local, rp, h)
	if err != nil {
		ch.Err = err.Error()
		return ch, true
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(local)
		if r.Type != typeSymlink || r.Target != target {
			return ch, true
		}
		if r.MTime != fi.ModTime().UnixNano() {
			ch.Kind = "metadata"
			return ch, true
		}
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeDevice) != 0: // a FIFO or device: its record has no content
		if r.Type != typeSpecial || r.Mode&modeTypeMask != specialMode(fi.Mode())&modeTypeMask || r.Rdev != localRdev(fi) {
			return ch, true
		}
		if r.Mode != specialMode(fi.Mode()) || r.MTime != fi.ModTime().UnixNano() {
			ch.Kind = "metadata"
			return ch, true
		}
	case r.Type != typeFile || r.Size != uint64(fi.Size()) || r.MTime != fi.ModTime().UnixNano() || r.Mode != unixMode(fi.Mode()):
		return ch, true
	}
	return ch, false
}

// excludedStored applies Options.Exclude to a stored plain path below base as the walk of
// the local folder does: each folder on the way, with its path below base, then the entry.
// Found by review: matching every part with the whole path, "cache/*" or "a/b" excluded
// the local folder but not what was stored below it, and sync removed that.
func (c *Client) excludedStored(plain, base string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(plain, base), "/")
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		if c.excluded(part, strings.Join(parts[:i+1], "/")) {
			return true
		}
	}
	return false
}

// stillGone keeps the removals whose local path (below local, which is stored as stored)
// is still absent; of a folder that is a folder locally again, the removals below it
// (changes) that are still absent. Found by review: a folder made again dropped its whole
// removal, and what was gone from it stayed stored, the sync reporting success.
func stillGone(gone, changes []Change, local, stored string) []Change {
	var out []Change
	for _, g := range gone {
		rel := strings.TrimPrefix(strings.TrimPrefix(g.Path, stored), "/")
		fi, err := lstatExact(filepath.Join(local, filepath.FromSlash(rel)))
		if errors.Is(err, fs.ErrNotExist) {
			out = append(out, g)
			continue
		}
		if err != nil || !g.IsDir || !fi.IsDir() {
			continue
		}
		var below []Change // one per folder, as gone
		for _, ch := range changes {
			if ch.Kind == "removed" && strings.HasPrefix(ch.Path, g.Path+"/") && !coveredBy(ch.Path, below) {
				below = append(below, ch)
			}
		}
		out = append(out, stillGone(below, changes, local, stored)...)
	}
	return out
}

// SyncResult reports a sync: the differences it found and, unless a dry run, the put's
// summary and how many stored entries it removed.
type SyncResult struct {
	Changes []Change `json:"changes"`
	Put     *Summary `json:"put,omitempty"`
	Removed int      `json:"removed"`
	DryRun  bool     `json:"dry_run"`
}

// ErrSyncEmpty is a sync refused because its local folder is empty (a mount that failed,
// a disk not there) while something is stored under it: found by a user walkthrough, such
// a sync removed everything. SyncOptions.AllowEmpty allows it.
var ErrSyncEmpty = errors.New("refusing to sync an empty folder (--allow-empty to remove what is stored)")

// Sync makes the stored folder dest/<name of local> exactly the local folder local: it
// stores what is new or changed (Put) and then removes what is stored but no longer local
// (deleted or renamed there), under the same lock, so the sync is one snapshot; removed
// entries stay in the snapshots. If any file fails to be stored, nothing is removed but
// what changed kind (a stored file that is a folder locally, or the reverse: replaced
// before the put stores its new kind). With dryRun it only reports the differences.
func (c *Client) Sync(ctx context.Context, local, dest string, dryRun bool) (*SyncResult, error) {
	return c.SyncWith(ctx, local, dest, SyncOptions{DryRun: dryRun})
}

// SyncOptions tune SyncWith.
type SyncOptions struct {
	DryRun     bool // list what would change, change nothing
	AllowEmpty bool // an empty local folder may remove everything stored under it (else ErrSyncEmpty)
}

// SyncWith is Sync with options.
func (c *Client) SyncWith(ctx context.Context, local, dest string, o SyncOptions) (*SyncResult, error) {
	dryRun := o.DryRun
	start := time.Now()
	// The folder is stored under its own name: "." and ".." name none (found by review:
	// 'veil sync .' compared the folder with DEST itself and removed all else stored there).
	local, err := filepath.Abs(local)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(local)
	if name == string(filepath.Separator) {
		return nil, fmt.Errorf("%s is the root folder: it has no name to store it under", local)
	}
	stored := joinPath(cleanPath(dest), name)
	changes, err := c.diffLocal(ctx, local, stored, true)
	if err != nil {
		return nil, err
	}
	if local, err = localFolder(local); err != nil {
		return nil, err
	}
	res := &SyncResult{Changes: changes, DryRun: dryRun}
	if dryRun {
		return res, nil
	}
	gone, replaced := removals(changes, localKind(local, stored))
	if len(gone) > 0 && !o.AllowEmpty {
		if ents, err := os.ReadDir(local); err == nil && len(ents) == 0 {
			return res, fmt.Errorf("%w: %s is empty; syncing it would remove everything stored under %s (%s)",
				ErrSyncEmpty, local, stored, words.Count(len(gone), "entry", "entries"))
		}
	}
	// What changed kind locally (a file now a folder, or the reverse) is removed first, under
	// Put's lock, as put replaces a changed file: put stores no file where a folder is, nor
	// the reverse (found by review: such a sync failed each time it ran).
	var n int
	c.putFirst = func(ctx context.Context) (err error) {
		n, err = c.removeAll(ctx, replaced, changes)
		return err
	}
	// The removals run inside Put, under its lock, once every file is stored: one snapshot.
	// What is local again by then (its put stored it) is not removed: found by review, an
	// editor's save by rename between the diff and the put's walk lost the file.
	c.putThen = func(ctx context.Context) (err error) {
		res.Removed, err = c.removeAll(ctx, stillGone(gone, changes, local, stored), changes)
		return err
	}
	res.Put, err = c.Put(ctx, []string{local}, dest)
	c.putFirst, c.putThen = nil, nil
	res.Removed += n
	if res.Put != nil && res.Put.Duration > 0 { // 0: it stored nothing (put.go)
		res.Put.Duration = time.Since(start)
	}
	if err != nil {
		return res, err
	}
	if err := res.Put.Err(); err != nil && n > 0 {
		return res, fmt.Errorf("%w; nothing removed but the %s whose kind changed (kept in snapshots)", err, words.Count(n, "entry", "entries"))
	} else if err != nil {
		return res, fmt.Errorf("%w; nothing removed", err)
	}
	return res, nil
}

// removals splits the stored entries that diff lists as removed (sorted input; one per
// folder, not what it holds) into those gone locally and those local again as the other
// kind (a file where a folder was, or the reverse: replaced), as diff lists it added or,
// for a name stored both as a file and as a folder (an older veil's put made such), as
// local says: found by review, such a sync failed each time (put refuses the clash).
func removals(changes []Change, local func(path string) (isDir, ok bool)) (gone, replaced []Change) {
	added := map[string]bool{} // path -> IsDir of what is local there
	for _, ch := range changes {
		if ch.Kind == "added" {
			added[ch.Path] = ch.IsDir
		}
	}
	for _, ch := range changes {
		if ch.Kind != "removed" || coveredBy(ch.Path, gone) || coveredBy(ch.Path, replaced) {
			continue
		}
		if isDir, ok := added[ch.Path]; ok && isDir != ch.IsDir {
			replaced = append(replaced, ch)
		} else if isDir, ok := local(ch.Path); ok && isDir != ch.IsDir {
			replaced = append(replaced, ch)
		} else {
			gone = append(gone, ch)
		}
	}
	return gone, replaced
}

// localKind tells what is local at a stored path below stored (the folder local is
// stored as): a folder or not, and whether anything put stores is there.
func localKind(local, stored string) func(path string) (isDir, ok bool) {
	return func(path string) (bool, bool) {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, stored), "/")
		fi, err := lstatExact(filepath.Join(local, filepath.FromSlash(rel)))
		if err != nil || cannotStore(fi.Mode()) {
			return false, false
		}
		return fi.IsDir(), true
	}
}

// coveredBy reports whether path is below a folder already in gone (sorted input).
func coveredBy(path string, gone []Change) bool {
	for _, g := range gone {
		if g.IsDir && strings.HasPrefix(path, g.Path+"/") {
			return true
		}
	}
	return false
}
