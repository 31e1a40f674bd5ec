package dupless

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Version is one state of a stored path across the retained snapshots: a file's record,
// or everything below a directory. Versions are numbered from 1, oldest first; a
// deletion is listed with N = 0.
type Version struct {
	N        int       `json:"version,omitempty"`
	Seq      uint64    `json:"snapshot"` // the first snapshot that holds this state
	Time     time.Time `json:"time"`     // that snapshot's time
	Deleted  bool      `json:"deleted,omitempty"`
	IsDir    bool      `json:"dir,omitempty"`
	Files    int       `json:"files,omitempty"` // directory: files and symlinks below it
	Size     int64     `json:"size"`            // file: its size; symlink: its target's length
	ModTime  time.Time `json:"mtime"`           // file: its modification time
	Symlink  string    `json:"symlink,omitempty"`
	Fallback bool      `json:"fallback,omitempty"`
	Err      string    `json:"error,omitempty"` // the version's record could not be read
}

// pathState is what a root holds of one path: a digest of its entries.
type pathState struct {
	present bool
	isDir   bool
	files   int
	file    [32]byte // the file's record hash (files only)
	digest  [32]byte
}

// stateIn computes path's state in r; fileRec is its record path as a file, dirEnc its
// encrypted path as a directory ("" with whole for the root).
func stateIn(r *treeRoot, fileRec, dirEnc string, whole bool) pathState {
	var st pathState
	if h, ok := r.Entries[fileRec]; ok && !whole {
		st.present, st.file, st.files = true, h, 1
		st.digest = sha256.Sum256(append([]byte(fileRec+"\x00"), h[:]...))
		return st
	}
	var paths []string
	for p := range r.Entries {
		if whole || strings.HasPrefix(p, dirEnc+"/") {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return st
	}
	sort.Strings(paths)
	d := sha256.New()
	for _, p := range paths {
		h := r.Entries[p]
		d.Write([]byte(p + "\x00"))
		d.Write(h[:])
		if strings.HasSuffix(p, keySuffix) {
			st.files++
		}
	}
	st.present, st.isDir = true, true
	copy(st.digest[:], d.Sum(nil))
	return st
}

// Log lists the versions of path (a file, symlink or directory; "" for the whole tree)
// over the retained snapshots, oldest first: one entry each time its state changed.
func (c *Client) Log(ctx context.Context, path string) ([]Version, error) {
	path = cleanPath(path)
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	roots, err := c.loadRoots(ctx)
	if err != nil {
		return nil, err
	}
	var fileRec, dirEnc string
	if path != "" {
		encDir, encName, err := c.encFile(path)
		if err != nil {
			return nil, err
		}
		fileRec = storage.Join(encDir, encName+keySuffix)
		dirEnc = storage.Join(encDir, encName)
	}
	var out []Version
	var prev pathState
	n := 0
	cur := sync.OnceValues(func() ([]byte, error) { return c.currentObject(ctx, fileRec) }) // read once for every version
	for _, r := range roots {
		st := stateIn(r, fileRec, dirEnc, path == "")
		if st.present == prev.present && st.digest == prev.digest {
			continue
		}
		prev = st
		v := Version{Seq: r.Seq, Time: time.Unix(0, r.Time)}
		if !st.present {
			v.Deleted = true
			out = append(out, v)
			continue
		}
		n++
		v.N, v.IsDir, v.Files = n, st.isDir, st.files
		if !st.isDir {
			c.fillVersion(ctx, &v, fileRec, st.file, cur)
		}
		out = append(out, v)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: in no snapshot: %w", displayPath(path), storage.ErrNotFound)
	}
	return out, nil
}

// fillVersion reads a file version's record for its size and times; cur returns the
// object now at path.
func (c *Client) fillVersion(ctx context.Context, v *Version, path string, h [32]byte, cur func() ([]byte, error)) {
	b, err := cur()
	if err != nil {
		v.Err = err.Error()
		return
	}
	r, err := c.versionRecord(ctx, path, h, b)
	if err != nil {
		v.Err = err.Error()
		return
	}
	v.Size, v.ModTime, v.Symlink = r.size(), time.Unix(0, r.MTime), r.Target
	for _, ch := range r.Chunks {
		if ch.Flags&flagRandomKey != 0 {
			v.Fallback = true
		}
	}
}

// Deleted reports whether path, not stored now, is in some retained snapshot: a command
// that did not find it can then point to 'veil log PATH' (found by a user walkthrough: a
// get of a deleted file said only "not found"). false when the client is pinned, or the
// snapshots cannot be read (the caller's own error stands).
func (c *Client) Deleted(ctx context.Context, path string) bool {
	path = cleanPath(path)
	if c.pinned() || path == "" {
		return false
	}
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return false
	}
	roots, _, err := c.loadRootsDamaged(ctx)
	if err != nil || len(roots) == 0 {
		return false
	}
	fileRec, dirEnc := storage.Join(encDir, encName+keySuffix), storage.Join(encDir, encName)
	if stateIn(roots[len(roots)-1], fileRec, dirEnc, false).present {
		return false // in the newest snapshot: what was not found is something of it (a chunk)
	}
	for _, r := range roots {
		if stateIn(r, fileRec, dirEnc, false).present {
			return true
		}
	}
	return false
}
