package dupless

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Entry describes one stored file, symlink or directory.
type Entry struct {
	Path     string      `json:"path"`
	IsDir    bool        `json:"dir,omitempty"`
	Symlink  string      `json:"symlink,omitempty"`
	Size     int64       `json:"size"` // a symlink: its target's length, as lstat(2) says
	Mode     fs.FileMode `json:"mode"`
	ModTime  time.Time   `json:"mtime"`
	Chunks   int         `json:"chunks,omitempty"`
	Fallback bool        `json:"fallback,omitempty"` // some chunk is under a random key (no dedup)
	Err      string      `json:"error,omitempty"`    // the entry's record could not be read
}

// List returns the entries directly in path (or path itself if it is a file). With long
// set it reads each entry's record for size, mode and time (one request per entry).
func (c *Client) List(ctx context.Context, path string, long bool) ([]Entry, error) {
	folderOnly := strings.HasSuffix(path, "/")
	path = cleanPath(path)
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	kind, err := c.kindOf(ctx, path)
	if errors.Is(err, storage.ErrNotFound) && path != "" {
		encDir, encName, _ := c.encFile(path)
		if e := c.missing(storage.Join(encDir, encName+keySuffix)); e != nil {
			return nil, e
		}
	}
	if err != nil {
		return nil, err
	}
	if kind != typeDir && folderOnly { // NAME/ is the folder, as rm takes it
		encDir, encName, _ := c.encFile(path)
		if fi, err := c.statEntry(ctx, encDir, encName); err != nil || !fi.IsDir {
			return nil, fileWithSlash(path)
		}
		kind = typeDir // a name stored both ways (before names_clash.go's rule): the folder
	}
	if kind != typeDir {
		encDir, encName, _ := c.encFile(path)
		e := Entry{Path: path}
		if err := c.fillEntry(ctx, &e, encDir, encName+keySuffix); err != nil {
			return nil, err
		}
		return []Entry{e}, nil
	}
	encDir, err := c.keys.encPath(path)
	if err != nil {
		return nil, err
	}
	infos, err := c.listDir(ctx, encDir)
	if err != nil {
		return nil, c.inFolder(encDir, err)
	}
	var out []Entry
	var stale []int // entries the root lists otherwise: what a killed mv moved?
	expect := c.rootChildren(encDir)
	for _, fi := range infos {
		if isInternal(fi.Name) {
			continue
		}
		plain, isDir, err := c.plainName(fi)
		if errors.Is(err, ErrLongNameMissing) { // ours (a tag), but its name cannot be read
			tag, _ := cutSuffix(fi.Name, keySuffix)
			out = append(out, Entry{Path: joinPath(path, tag), IsDir: fi.IsDir, Err: err.Error()})
			continue
		}
		if err != nil {
			continue // not ours
		}
		e := Entry{Path: joinPath(path, plain), IsDir: isDir}
		if _, listed := expect[fi.Name]; expect != nil && !isDir && !listed {
			if err := c.stale(ErrStale); err != nil {
				e.Err = err.Error() // a record the root does not list: rolled back from a deletion?
				stale = append(stale, len(out))
			}
		}
		delete(expect, fi.Name)
		if long {
			d, n := encDir, fi.Name
			if isDir {
				d, n = storage.Join(encDir, fi.Name), dirMetaName
			}
			if err := c.fillEntry(ctx, &e, d, n); err != nil && !(isDir && errors.Is(err, storage.ErrNotFound)) {
				e.Err = err.Error() // shown per entry; one bad record does not hide the rest
			}
		}
		out = append(out, e)
	}
	for name, isDir := range expect { // listed in the root, not by the storage service
		plain, _, err := c.plainName(storage.Info{Name: name, IsDir: isDir})
		if err != nil {
			continue
		}
		if err := c.stale(fmt.Errorf("deleted: %w", ErrStale)); err != nil {
			stale = append(stale, len(out))
			out = append(out, Entry{Path: joinPath(path, plain), IsDir: isDir, Err: err.Error()})
		}
	}
	if len(stale) > 0 {
		if note := c.pendingNote(ctx, path); note != "" {
			for _, i := range stale {
				out[i].Err = note
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func (c *Client) fillEntry(ctx context.Context, e *Entry, encDir, objName string) error {
	r, err := c.readRecord(ctx, encDir, objName)
	if err != nil {
		return err
	}
	e.Size, e.Mode, e.ModTime, e.Chunks = r.size(), goMode(r.Mode), time.Unix(0, r.MTime), len(r.Chunks)
	e.IsDir, e.Symlink = r.Type == typeDir, r.Target
	if r.Type == typeDir {
		e.Mode |= fs.ModeDir
	}
	if r.Type == typeSymlink {
		e.Mode |= fs.ModeSymlink
	}
	if r.Type == typeSpecial {
		e.Mode = specialGoMode(r.Mode)
	}
	for _, ch := range r.Chunks {
		if ch.Flags&flagRandomKey != 0 {
			e.Fallback = true
		}
	}
	return nil
}

// Mkdir creates a directory (and its parents).
func (c *Client) Mkdir(ctx context.Context, path string) error {
	done, err := c.MkdirEach(ctx, []string{path})
	if len(done) == 1 && done[0].Err != nil {
		return done[0].Err
	}
	return err
}

// mkdirChecked creates path under the command's lock, unless a file is on it.
func (c *Client) mkdirChecked(ctx context.Context, path string) error {
	if err := c.refusePending(ctx, "", "", cleanPath(path)); err != nil {
		return err
	}
	if err := c.noFileOnPath(ctx, path); err != nil {
		return err
	}
	return c.mkdir(ctx, path)
}

func (c *Client) mkdir(ctx context.Context, path string) error {
	enc, err := c.keys.encPath(path)
	if err != nil {
		return err
	}
	if enc == "" {
		return nil
	}
	if err := c.storeLongNames(ctx, enc); err != nil {
		return err
	}
	if err := c.be.Create(ctx, enc); err != nil {
		return err
	}
	// The folder and its parents, each unless it has a record: mkdir of a stored folder
	// keeps its mode and time (found in session 15: it replaced a folder put from disk's
	// with 0755 and the time of the mkdir).
	return c.recordFolders(ctx, path, true)
}

// Remove deletes a file or symlink; a directory only with recursive. Chunk objects are
// left for Prune, since other files of the user may share them.
func (c *Client) Remove(ctx context.Context, path string, recursive bool) (*Summary, error) {
	done, err := c.RemoveEach(ctx, []string{path}, recursive)
	if len(done) == 0 {
		return &Summary{}, err
	}
	if done[0].Err != nil {
		return done[0].Summary, done[0].Err
	}
	return done[0].Summary, err
}

// removeOne is Remove of one path, under the command's lock.
func (c *Client) removeOne(ctx context.Context, path string, recursive bool) (*Summary, error) {
	sum := &Summary{}
	raw := path
	path = cleanPath(path)
	if err := c.refusePending(ctx, "", "", path); err != nil {
		return sum, err
	}
	kind, err := c.removeKind(ctx, raw)
	if errors.Is(err, storage.ErrNotFound) {
		return sum, c.finishRemove(path, strings.HasSuffix(raw, "/"), recursive, sum, err)
	}
	if err != nil {
		return sum, err
	}
	if kind != typeDir {
		encDir, encName, _ := c.encFile(path)
		damaged, err := c.deleteRecord(ctx, encDir, encName+keySuffix)
		if err != nil {
			return sum, err
		}
		sum.Files++
		if damaged {
			sum.Damaged++
		}
		return sum, nil
	}
	if path == "" {
		return sum, errors.New("refusing to remove the root; remove its entries one by one")
	}
	if !recursive {
		return sum, fmt.Errorf("%s is a directory (use -r to remove it and everything below)", path)
	}
	enc, _ := c.keys.encPath(path)
	if err := c.removeTree(ctx, enc, sum); err != nil {
		return sum, err
	}
	for _, p := range c.rootPaths(enc) { // records an unfinished rm deleted already
		c.noteDeleted(p)
	}
	return sum, nil
}

// finishRemove completes an rm of path that deleted its records but could not publish its
// tree root (interrupted, a full disk): the root still lists them, the storage service no
// longer holds them, and reads report them deleted until rm runs again. Found by a user
// walkthrough: that second rm said "not found". A path the root does not list either is
// notFound; folderOnly (NAME/) finishes only a folder's removal.
func (c *Client) finishRemove(path string, folderOnly, recursive bool, sum *Summary, notFound error) error {
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return notFound
	}
	if _, listed := c.rootHash(storage.Join(encDir, encName+keySuffix)); listed && !folderOnly {
		c.noteDeleted(storage.Join(encDir, encName+keySuffix))
		sum.Files++
		return nil
	}
	below := c.rootPaths(storage.Join(encDir, encName))
	if len(below) == 0 {
		return notFound
	}
	if !recursive {
		return fmt.Errorf("%s is a directory (use -r to remove it and everything below)", path)
	}
	for _, p := range below {
		c.noteDeleted(p)
		if !isDirMeta(p) {
			sum.Files++
		}
	}
	sum.Dirs++
	return nil
}

// Find returns the paths of every file, symlink or directory named exactly name. The
// storage service does the search, on encrypted names.
func (c *Client) Find(ctx context.Context, name string) ([]string, error) {
	enc, err := c.keys.encName(name)
	if err != nil {
		return nil, err
	}
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	if paths, ok := c.findInRoot(enc); ok {
		return paths, nil
	}
	var out []string
	for _, n := range []string{enc + keySuffix, enc} {
		hits, err := c.be.Search(ctx, "", n)
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if h.IsDir != (n == enc) {
				continue
			}
			p, err := c.keys.decPath(h.Dir)
			if err != nil {
				continue
			}
			out = append(out, joinPath(p, name))
		}
	}
	sort.Strings(out)
	return out, nil
}

// PruneResult reports what Prune found and removed.
type PruneResult struct {
	Records         int      `json:"records"`
	ChunksInUse     int      `json:"chunks_in_use"`
	ChunksRemoved   int      `json:"chunks_removed"`
	BytesRemoved    int64    `json:"bytes_removed"`
	ChunksTooYoung  int      `json:"chunks_too_young"`  // unreferenced but newer than the grace period
	Snapshots       int      `json:"snapshots"`         // retained snapshots whose records were counted
	Versions        int      `json:"versions"`          // kept record versions (not the current ones) they reference
	VersionsMissing int      `json:"versions_missing"`  // versions they list that are not stored (damage: 'veil check' names them)
	VersionsDamaged int      `json:"versions_damaged"`  // versions they list whose kept copy is damaged: no chunk is deleted while there are any
	ChunksHeld      int      `json:"chunks_held"`       // unreferenced chunks kept because a damaged version may refer to them
	Damaged         []string `json:"damaged,omitempty"` // the damaged versions, as "PATH (snapshot N)"
	VersionsRemoved int      `json:"versions_removed"`  // kept versions no snapshot lists any more
	NamesRemoved    int      `json:"names_removed"`     // long names' objects no stored path or snapshot holds (prunenames.go)
	BasesRemoved    int      `json:"bases_removed"`     // tree bases no retained snapshot's root refers to (rootbase.go)
}

// DefaultGrace is the age below which Prune keeps unreferenced chunks unless told otherwise:
// longer than a put takes between sending a chunk and writing the record that references it.
const DefaultGrace = time.Hour

// Prune deletes chunk objects that no key record references any more (after rm, or after
// overwriting a file), kept versions no snapshot lists, and long names' objects no stored
// path or snapshot holds (prunenames.go). What is younger than grace is kept: a concurrent
// put may be about to write the record that references it. With dryRun nothing is deleted.
func (c *Client) Prune(ctx context.Context, grace time.Duration, dryRun bool) (*PruneResult, error) {
	res := &PruneResult{}
	unlock, err := c.lock(ctx, true)
	if err != nil {
		return res, err
	}
	defer unlock()
	if !dryRun { // excludes lock-free puts from here on (putlockless.go)
		unmark, err := c.markPruning(ctx)
		if err != nil {
			return res, err
		}
		defer unmark()
	}
	used, seen, current, tags := map[string]bool{}, map[string]bool{}, map[string][32]byte{}, map[string]bool{}
	err = c.walk(ctx, "", true, func(rel string, isDir bool, encDir, objName string) error {
		seen[storage.Join(encDir, objName)] = true
		noteTags(tags, storage.Join(encDir, objName))
		if isDir {
			return nil
		}
		r, h, err := c.readCurrent(ctx, encDir, objName)
		if errors.Is(err, ErrStale) { // an unfinished command's record (readListed)
			if err = c.unfinishedChunks(ctx, encDir, objName, used); err == nil {
				r, h, err = c.readListed(ctx, encDir, objName)
			}
			if errors.Is(err, errNotListed) {
				return nil // no root lists it: its chunks stay, nothing else is its
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w (prune stops: it must see every record)", rel, err)
		}
		current[storage.Join(encDir, objName)] = h
		res.Records++
		for _, ch := range r.Chunks {
			used[hex.EncodeToString(ch.Tag[:])] = true
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	gone, err := c.unseenGone(ctx, seen)
	if err != nil {
		return res, err
	}
	if len(gone) > 0 {
		if err := c.stale(fmt.Errorf("%s (and %d more): deleted: %w (prune stops: it must see every record)", gone[0], len(gone)-1, ErrStale)); err != nil {
			return res, err
		}
	}
	listed, roots, err := c.historyChunks(ctx, current, used, tags, res)
	if err != nil {
		return res, err
	}
	res.ChunksInUse = len(used)
	cutoff := c.storageNow().Add(-grace) // what is younger may be a running put's
	c.pruneRootTemps(ctx, cutoff, dryRun)
	if err := c.pruneBases(ctx, roots, cutoff, dryRun, res); err != nil {
		return res, err
	}
	if err := c.pruneVersions(ctx, listed, cutoff, dryRun, res); err != nil {
		return res, err
	}
	if err := c.pruneNames(ctx, tags, cutoff, dryRun, res); err != nil {
		return res, err
	}
	prefixes, err := c.be.List(ctx, chunkRoot)
	if errors.Is(err, storage.ErrNotFound) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	for _, p := range prefixes {
		dir := storage.Join(chunkRoot, p.Name)
		objs, err := c.be.List(ctx, dir)
		if err != nil {
			return res, err
		}
		for _, o := range objs {
			if used[o.Name] {
				continue
			}
			if o.ModTime.IsZero() || o.ModTime.After(cutoff) { // unknown age: keep
				res.ChunksTooYoung++
				continue
			}
			if res.VersionsDamaged > 0 { // it may be one of a damaged version's (historyChunks)
				res.ChunksHeld++
				continue
			}
			if !dryRun {
				if err := c.be.Delete(ctx, dir, o.Name); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return res, err
				}
			}
			res.ChunksRemoved++
			res.BytesRemoved += o.Size
		}
	}
	return res, nil
}
