package dupless

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// Check (veil check): verifies the user's own tree and its snapshots, per file, without
// changing anything.

// CheckOptions say how much content Check reads.
type CheckOptions struct {
	ReadData bool    // download and verify every chunk (as get does)
	Subset   float64 // in (0, 1]: download and verify this fraction of the chunks, at random
}

// CheckResult reports what Check verified and the damage it found, per file.
type CheckResult struct {
	Files            int           `json:"files"` // files and symlinks of the newest tree
	Dirs             int           `json:"dirs"`
	Snapshots        int           `json:"snapshots"`
	SnapshotsDamaged int           `json:"snapshots_damaged"` // retained but unreadable (root or base damaged or missing): each also a problem
	Versions         int           `json:"versions"`          // older records the snapshots list, checked
	VersionsMissing  int           `json:"versions_missing"`  // listed but not stored: each also a problem (checkhist.go)
	VersionsDamaged  int           `json:"versions_damaged"`  // listed, their kept copy damaged: each also a problem
	Clashes          int           `json:"clashes"`           // names stored both as a file and as a folder: each also a problem
	Chunks           int           `json:"chunks"`            // distinct chunks referenced, each checked present
	ChunksRead       int           `json:"chunks_read"`       // of those, downloaded and verified
	BytesRead        int64         `json:"bytes_read"`        // plaintext bytes verified
	Problems         []FileError   `json:"problems"`
	Unrecorded       []string      `json:"folders_without_record"` // no damage: folders an older veil made without a record (dirrepair.go)
	Pending          []FileError   `json:"pending"`                // no damage: entries an interrupted mv left otherwise than the root lists (checkpending.go)
	Duration         time.Duration `json:"duration_ns"`
}

// chunkUse is a chunk and the first file (and snapshot) that refers to it.
type chunkUse struct {
	ref  chunkRef
	path string
	read bool // download and verify it (--read-data, or drawn for --read-data-subset)
}

// Check verifies every record of the newest tree (authenticated, listed by the newest
// tree root) and of every retained snapshot, and that every chunk they refer to is
// stored with a plausible size; with ReadData (or Subset) it also downloads chunks and
// verifies them as get does. Damage is reported per file in Problems; err is for failures
// that stop the check (the tree root itself, the storage service unreachable).
func (c *Client) Check(ctx context.Context, o CheckOptions) (*CheckResult, error) {
	start := time.Now()
	res := &CheckResult{Problems: []FileError{}, Unrecorded: []string{}, Pending: []FileError{}}
	if o.Subset < 0 || o.Subset > 1 {
		return res, fmt.Errorf("subset %v: give a fraction in (0, 1]", o.Subset)
	}
	if err := c.refresh(ctx); err != nil {
		return res, err
	}
	chunks := map[mle.Tag]chunkUse{}
	current := map[string][32]byte{}
	var mu sync.Mutex
	problem := func(path string, err error) {
		mu.Lock()
		res.Problems = append(res.Problems, FileError{Path: path, Err: err.Error()})
		mu.Unlock()
	}
	addChunks := func(path string, r *record) {
		for _, ch := range r.Chunks {
			if _, ok := chunks[ch.Tag]; !ok {
				chunks[ch.Tag] = chunkUse{ref: ch, path: path}
			}
		}
	}
	note := c.pendingCheck(ctx)
	stale := func(plain, path string, err error) { // an interrupted mv's doing, or damage
		if errors.Is(err, ErrStale) {
			if n := note(plain); n != "" {
				res.Pending = append(res.Pending, FileError{Path: path, Err: n})
				return
			}
		}
		problem(path, err)
	}
	seen := map[string]bool{}
	kinds := map[string]int{} // plain path -> 1: a file is stored there, 2: a folder, 3: both
	err := c.walk(ctx, "", false, func(rel string, isDir bool, encDir, objName string) error {
		seen[storage.Join(encDir, objName)] = true
		if isDir {
			res.Dirs++
			kinds[rel] |= 2
			_, err := c.readRecord(ctx, encDir, objName)
			if errors.Is(err, storage.ErrNotFound) {
				err = c.missing(storage.Join(encDir, objName)) // nil unless the root lists it
				if err == nil {
					if n := note(rel); n != "" { // made by the mv, its record still to come
						res.Pending = append(res.Pending, FileError{Path: rel + "/", Err: n})
					} else {
						res.Unrecorded = append(res.Unrecorded, rel)
					}
				}
			}
			if err != nil {
				stale(rel, rel+"/", err)
			}
			return nil
		}
		res.Files++
		kinds[rel] |= 1
		r, h, err := c.readCurrent(ctx, encDir, objName)
		if errors.Is(err, ErrStale) { // an unfinished command's record: check the root's version
			if lr, lh, lerr := c.readListed(ctx, encDir, objName); lerr == nil {
				r, h, err = lr, lh, nil
			}
		}
		if err != nil {
			stale(rel, rel, err)
			return nil
		}
		current[storage.Join(encDir, objName)] = h
		addChunks(rel, r)
		return ctx.Err()
	})
	if err != nil {
		return res, err
	}
	for p, k := range kinds {
		if k == 3 {
			res.Clashes++
			problem(p, errBothKinds(p))
		}
	}
	seen[dirMetaName] = true
	gone, err := c.unseenGone(ctx, seen)
	if err != nil {
		return res, err
	}
	for _, p := range gone {
		stale(p, p, fmt.Errorf("deleted: %w", ErrStale))
	}
	if err := c.checkSnapshots(ctx, current, res, addChunks, problem); err != nil {
		return res, err
	}
	res.Chunks = len(chunks)
	c.checkChunks(ctx, o, chunks, res, problem)
	sort.Slice(res.Problems, func(i, j int) bool { return res.Problems[i].Path < res.Problems[j].Path })
	sort.Strings(res.Unrecorded)
	sort.Slice(res.Pending, func(i, j int) bool { return res.Pending[i].Path < res.Pending[j].Path })
	res.Duration = time.Since(start)
	return res, ctx.Err()
}

// checkSnapshots reads every older record version the retained snapshots list. A damaged
// snapshot (not the newest) is a problem, and the others are still checked.
func (c *Client) checkSnapshots(ctx context.Context, current map[string][32]byte, res *CheckResult,
	addChunks func(string, *record), problem func(string, error)) error {
	roots, damaged, err := c.loadRootsDamaged(ctx)
	if err != nil {
		return err
	}
	res.Snapshots, res.SnapshotsDamaged = len(roots)+len(damaged), len(damaged)
	for _, d := range damaged {
		problem(fmt.Sprintf("(snapshot %d)", d.Seq), fmt.Errorf("%s; 'veil forget --drop-damaged' drops it", d.Err))
	}
	c.view.mu.Lock()
	walked := c.view.root // the root the walk checked the newest tree against
	c.view.mu.Unlock()
	written, _, err := c.rootObjects(ctx)
	if err != nil {
		return err
	}
	era := newVersionEra(roots, written)
	var missing []missingVersion
	done := map[[32]byte]bool{}
	for _, root := range roots {
		for path, h := range root.Entries {
			// A folder's record the newest root lists is the walk's (read there, or the
			// top folder's, which it does not read); older ones are versions as a file's
			// are: found by review, a damaged or missing one was no damage, and get
			// --snapshot of the folder failed.
			if done[h] || current[path] == h || isDirMeta(path) && walked != nil && walked.Entries[path] == h {
				continue
			}
			done[h] = true
			where := fmt.Sprintf("%s (snapshot %d)", c.describe(path), root.Seq)
			r, err := c.keptRecord(ctx, h, path)
			if errors.Is(err, storage.ErrNotFound) {
				if walked != nil && walked.Entries[path] == h {
					continue // the newest tree's record: the walk reported it
				}
				res.VersionsMissing++
				missing = append(missing, missingVersion{where, h})
				continue
			}
			if isDamage(err) {
				res.VersionsDamaged++
			}
			if err != nil {
				problem(where, err)
				continue
			}
			era.kept(h)
			res.Versions++
			addChunks(where, r)
		}
	}
	for _, m := range missing { // damage, with what the roots tell of when it was replaced
		problem(m.where, era.why(m.h))
	}
	return ctx.Err()
}

// checkChunks checks every chunk is stored with the size its record implies, and reads
// and verifies those o selects, their bytes reported as progress (Events.Total, Bytes:
// the bar of put and get; found by a user walkthrough, check --read-data said nothing
// until it was done, however long it ran).
func (c *Client) checkChunks(ctx context.Context, o CheckOptions, chunks map[mle.Tag]chunkUse, res *CheckResult, problem func(string, error)) {
	var total int64
	for tag, u := range chunks {
		if u.read = o.ReadData || o.Subset > 0 && mrand.Float64() < o.Subset; u.read {
			total += int64(u.ref.MsgLen)
			chunks[tag] = u
		}
	}
	if total > 0 && c.opts.Events.Total != nil {
		c.opts.Events.Total(0, total)
	}
	var mu sync.Mutex
	work, finish := workers(c, func(u chunkUse) {
		if !u.read {
			if err := c.statChunk(ctx, &u.ref); err != nil {
				problem(u.path, fmt.Errorf("chunk %s: %w", hex.EncodeToString(u.ref.Tag[:8]), err))
			}
			return
		}
		data, err := c.fetchChunk(ctx, &u.ref)
		if err != nil {
			problem(u.path, fmt.Errorf("chunk %s: %w", hex.EncodeToString(u.ref.Tag[:8]), err))
			return
		}
		mu.Lock()
		res.ChunksRead++
		res.BytesRead += int64(len(data))
		mu.Unlock()
		c.bytesDone(int64(u.ref.MsgLen))
	})
	for _, u := range chunks {
		select {
		case work <- u:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	finish()
}

// statChunk checks that a chunk object exists with a size its record allows: the message
// plus the header and one tag (deterministic schemes) or two (RCE).
func (c *Client) statChunk(ctx context.Context, ref *chunkRef) error {
	dir, name := chunkLocation(ref.Tag)
	fi, err := c.be.Stat(ctx, dir, name)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("%w: missing", ErrIntegrity)
	}
	if err != nil {
		return err
	}
	base := int64(ref.MsgLen) + mle.HeaderSize
	if fi.Size != base+mle.Size && fi.Size != base+2*mle.Size {
		return fmt.Errorf("%w: %d bytes stored, the record implies %d", ErrIntegrity, fi.Size, base+mle.Size)
	}
	return nil
}
