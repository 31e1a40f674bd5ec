package dupless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Browsing (veil mount): read-only views of snapshots that several goroutines use at once.
// A View holds one authenticated root and shares nothing mutable with its Client, so a
// mount can serve the newest tree and any number of snapshots side by side; a Catalog
// (catalog.go) gives it those views, each snapshot's when first browsed.

// View is one snapshot, read-only.
type View struct {
	c    *Client
	root *treeRoot
	dirs map[string]map[string]bool
	Snap Snapshot
}

// Node is one entry of a view: a file, symlink or directory, with its metadata.
type Node struct {
	Name    string
	IsDir   bool
	Size    int64
	Mode    fs.FileMode // permission bits (and ModeDir / ModeSymlink)
	ModTime time.Time
	Target  string // symlink
	Rdev    uint64 // device number of a device (Mode has ModeDevice)
	rec     *record
	sum     [32]byte // the hash the root lists for its record (Version)

	mu      sync.Mutex
	recent  [2]cachedChunk  // the last chunks read, newest first: the kernel reads in small pieces, out of order
	flights map[int]*flight // chunks being fetched: a second reader waits for the first
}

// cachedChunk is a verified chunk of a Node's file (data nil: none).
type cachedChunk struct {
	idx  int
	data []byte
}

// flight is one fetch of a chunk that other readers wait for.
type flight struct {
	done chan struct{}
	data []byte
	err  error
}

// Lookup returns the entry name in the directory dir (a plain path, "" for the root).
func (v *View) Lookup(ctx context.Context, dir, name string) (*Node, error) {
	encDir, err := v.c.keys.encPath(dir)
	if err != nil {
		return nil, err
	}
	encName, err := v.c.keys.encName(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, storage.ErrNotFound)
	}
	kids := v.dirs[encDir]
	if isDir, ok := kids[encName]; ok && isDir {
		return v.dirNode(ctx, storage.Join(encDir, encName), name)
	}
	if _, ok := kids[encName+keySuffix]; !ok {
		return nil, fmt.Errorf("%s: %w", joinPath(dir, name), storage.ErrNotFound)
	}
	path := storage.Join(encDir, encName+keySuffix)
	r, err := v.c.recordIn(ctx, path, v.root.Entries[path])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", joinPath(dir, name), err)
	}
	n := &Node{Name: name, Size: r.size(), Mode: goMode(r.Mode), ModTime: time.Unix(0, r.MTime), Target: r.Target, rec: r,
		sum: v.root.Entries[path]}
	switch r.Type {
	case typeFile:
	case typeSymlink:
		n.Mode |= fs.ModeSymlink
	case typeSpecial: // a FIFO or device: metadata only, as get restores it
		n.Mode, n.Rdev = specialGoMode(r.Mode), r.Rdev
	default:
		return nil, fmt.Errorf("%s: %w: record type %d where a file was expected", joinPath(dir, name), ErrRecord, r.Type)
	}
	return n, nil
}

// EntryVersion is what Version would be for the entry name of directory dir (a plain
// path, "" for the root), and whether it is a directory, read from the view's root alone:
// no request. ok is false when the view has no such entry.
func (v *View) EntryVersion(dir, name string) (sum [32]byte, isDir, ok bool) {
	encDir, err := v.c.keys.encPath(dir)
	if err != nil {
		return sum, false, false
	}
	encName, err := v.c.keys.encName(name)
	if err != nil {
		return sum, false, false
	}
	kids := v.dirs[encDir]
	if d, found := kids[encName]; found && d {
		return v.entryHash(encDir, encName, true), true, true
	}
	if _, found := kids[encName+keySuffix]; found {
		return v.entryHash(encDir, encName+keySuffix, false), false, true
	}
	return sum, false, false
}

// Version identifies what n describes: the hash the root lists for its record (a
// directory's metadata record; zero for a directory without one). Two roots listing the
// same version of a path describe the same content and metadata.
func (n *Node) Version() [32]byte { return n.sum }

// dirNode describes a directory from its metadata record (defaults without one).
func (v *View) dirNode(ctx context.Context, encDir, name string) (*Node, error) {
	n := &Node{Name: name, IsDir: true, Mode: fs.ModeDir | 0o755, ModTime: v.Snap.Time}
	path := storage.Join(encDir, dirMetaName)
	if h, ok := v.root.Entries[path]; ok {
		n.sum = h
		r, err := v.c.recordIn(ctx, path, h)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.c.plainDir(encDir), err)
		}
		n.Mode, n.ModTime = fs.ModeDir|goMode(r.Mode)&fs.ModePerm, time.Unix(0, r.MTime)
	}
	return n, nil
}

// DirEntry is a name in a view's directory.
type DirEntry struct {
	Name  string
	IsDir bool
}

// Entries lists the entries of directory dir, sorted by name: names and whether each is a
// directory (Lookup reads the rest).
func (v *View) Entries(ctx context.Context, dir string) ([]DirEntry, error) {
	encDir, err := v.c.keys.encPath(dir)
	if err != nil {
		return nil, err
	}
	kids, ok := v.dirs[encDir]
	if !ok {
		return nil, fmt.Errorf("%s: %w", displayPath(dir), storage.ErrNotFound)
	}
	out := make([]DirEntry, 0, len(kids))
	for enc, isDir := range kids {
		if err := v.c.preloadLongName(ctx, enc); err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		base := enc
		if !isDir {
			var ok bool
			if base, ok = cutSuffix(enc, keySuffix); !ok {
				continue
			}
		}
		if name, err := v.c.keys.decName(base); err == nil {
			out = append(out, DirEntry{Name: name, IsDir: isDir})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ReadAt reads file content at off into p, verifying every chunk it touches (as get does);
// it returns fewer bytes only at the end of the file.
func (v *View) ReadAt(ctx context.Context, n *Node, p []byte, off int64) (int, error) {
	return v.c.readAt(ctx, n, p, off)
}

// readAt is View.ReadAt, which needs no snapshot's listing: n's record names its chunks.
func (c *Client) readAt(ctx context.Context, n *Node, p []byte, off int64) (int, error) {
	if n.rec == nil || n.rec.Type != typeFile {
		return 0, errors.New("not a file")
	}
	done := 0
	var start int64
	for i := range n.rec.Chunks {
		ch := &n.rec.Chunks[i]
		end := start + int64(ch.PlainLen)
		if end > off && done < len(p) {
			data, err := c.chunk(ctx, n, i)
			if err != nil {
				return done, fmt.Errorf("%s: chunk %d: %w", n.Name, i+1, err)
			}
			from := max(off+int64(done)-start, 0)
			done += copy(p[done:], data[from:])
		}
		start = end
		if done == len(p) {
			break
		}
	}
	return done, nil
}

// chunk returns chunk i of n's file, verified, from n's cache or the service; a chunk
// another read is fetching is waited for, not fetched again. Found by review: a chunk
// that several of the kernel's parallel reads of one file needed was fetched by each.
func (c *Client) chunk(ctx context.Context, n *Node, i int) ([]byte, error) {
	for {
		n.mu.Lock()
		for _, r := range n.recent {
			if r.data != nil && r.idx == i {
				n.mu.Unlock()
				return r.data, nil
			}
		}
		f := n.flights[i]
		if f == nil {
			break // fetched below, n.mu held
		}
		n.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if f.err == nil {
			return f.data, nil
		}
		if ctx.Err() != nil || !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) {
			return nil, f.err
		}
		// the first reader gave up (its request was interrupted): fetch it anew
	}
	f := &flight{done: make(chan struct{})}
	if n.flights == nil {
		n.flights = map[int]*flight{}
	}
	n.flights[i] = f
	n.mu.Unlock()
	f.data, f.err = c.fetchChunk(ctx, &n.rec.Chunks[i])
	n.mu.Lock()
	delete(n.flights, i)
	if f.err == nil {
		n.recent[1], n.recent[0] = n.recent[0], cachedChunk{i, f.data}
	}
	n.mu.Unlock()
	close(f.done)
	return f.data, f.err
}

// DropCache forgets the chunks ReadAt keeps for n (a mount calls it when the file's last
// open handle closes: a node outlives its reads for as long as the kernel caches it).
func (n *Node) DropCache() {
	n.mu.Lock()
	n.recent = [2]cachedChunk{}
	n.mu.Unlock()
}
