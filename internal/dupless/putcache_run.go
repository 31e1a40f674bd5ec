package dupless

import (
	"io/fs"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// runCache is the put cache during one Put: loaded after the lock (the tree root is known
// then), consulted for every entry, added to as records are read or written, and saved
// after the next root is published.
type runCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry // only entries whose hash the root (or this command) lists
	dirty   bool
	dirs    map[string]bool // encrypted directory paths the root implies (built on first use)
	checked *treeRoot       // the root every entry was checked against when loaded
}

// cacheVerdict is what the cache says of a local file.
type cacheVerdict int

const (
	cacheUnknown cacheVerdict = iota // no usable entry: decide from the record (a file it matches is read: previous)
	cacheSame                        // the stored record describes this very file: skip it
	cacheSuspect                     // the record was stored from this path, but the file's ctime or inode changed, or its entry is racy: read it
)

// Racy clean (git's name; docs/design.md, "Put cache"). A file system stamps a write with
// its coarse clock: ext2/3 and HFS+ to the second, FAT's mtime to 2 s, ext4 before Linux
// 6.13 to the jiffy (1-10 ms); a network file system with its server's clock. A write
// within the same tick as put's read of the file leaves size, mtime, ctime and inode as
// put saw them, so an entry noted from that read would make every later put skip the
// changed file. So an entry is trusted only when the file's mtime and ctime were older
// than the moment put began to read it by more than racyMargin: any later write then
// stamps a time after the remembered ones. Otherwise the entry is noted racy (its ctime
// set to racyCTime, which no file has): the next put reads the file (no record is written
// if the content is the same) and notes it anew, trusted if that read was late enough.
// 3 s covers FAT's 2 s mtime steps, the 1 s of ext2/3, and a second of difference
// between this clock and the one that stamps the file (the kernel's coarse clock lags by
// up to a jiffy; an NFS server's clock by its skew). The cost is one more read of the
// files changed in the 3 s before a put read them.
const (
	racyMargin = 3 * time.Second
	racyCTime  = 0 // cacheEntry.CTime of a racy file entry: never a file's ctime, so it is read
)

// putClock is the clock read when put starts reading a file (a test seam: a put run long
// after the files were written).
var putClock = time.Now

// racy reports whether a file as fi describes it (stat before its content was read) may
// change later without its mtime or ctime moving: one of them is not older than started,
// the moment its reading began, by racyMargin. Unknown stat fields count as racy.
func racy(fi fs.FileInfo, started time.Time) bool {
	ctime, _, _, known := statIDs(fi)
	edge := started.Add(-racyMargin).UnixNano()
	return !known || started.IsZero() || fi.ModTime().UnixNano() >= edge || ctime >= edge
}

// cacheRead is the put cache file being read (readCache) in the background.
type cacheRead struct {
	done chan struct{}
	f    *cacheFile
	err  error
}

// startCacheRead starts reading the cache file: reading, authenticating, decompressing
// and parsing it need the key but not the tree root, so they run while the lock and the
// root are fetched (loadCache then keeps what the root vouches for). Reading it before
// the lock is as sound as after: an entry says only that a record of that hash was stored
// from a local file as described, which stays true, and loadCache still keeps only the
// entries whose hash the root lists. Nil without a cache.
func (c *Client) startCacheRead() *cacheRead {
	pc := c.opts.Cache
	if pc == nil {
		return nil
	}
	r := &cacheRead{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.f, r.err = c.keys.readCache(pc)
	}()
	return r
}

// loadCache takes the cache read by r and keeps the entries the current root vouches for.
// A cache that fails its check is logged and rebuilt; entries the root no longer lists
// as remembered (another device wrote them, or they were removed) are dropped.
func (c *Client) loadCache(r *cacheRead) *runCache {
	if r == nil {
		return nil
	}
	<-r.done
	f, err := r.f, r.err
	rc := &runCache{entries: map[string]cacheEntry{}}
	if err != nil {
		c.log.Warn("put cache unusable; rebuilding it (records are read this time)", "file", c.opts.Cache.Path, "err", err)
		rc.dirty = true
	}
	c.view.mu.Lock()
	root := c.view.root
	c.view.mu.Unlock()
	if root == nil {
		return rc
	}
	if f.RootSeq != root.Seq || f.RootSum != root.sum {
		rc.dirty = true // bound to the root it was written against: rewritten for this one
	}
	stale := 0
	for p, e := range f.Entries { // filtered in place: the file's map becomes the run's
		if h, ok := root.Entries[p]; !ok || h != e.Hash {
			delete(f.Entries, p)
			stale++
		}
	}
	rc.entries, rc.checked = f.Entries, root
	if stale > 0 {
		c.log.Info("put cache: entries the tree root no longer lists as remembered are refreshed", "stale", stale)
		rc.dirty = true
	}
	return rc
}

// saveCache writes the cache after the command, keeping the entries the root it ended
// with lists (a record this command wrote but did not publish is not trusted next time).
func (c *Client) saveCache(rc *runCache) {
	if rc == nil {
		return
	}
	c.view.mu.Lock()
	root := c.view.root
	c.view.mu.Unlock()
	if root == nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	keep := func(p string, e cacheEntry) bool { h, ok := root.Entries[p]; return ok && h == e.Hash }
	if !rc.dirty && root == rc.checked {
		return // nothing noted, and the root is the one every entry was checked against
	}
	if !rc.dirty { // nothing noted: unchanged unless the new root dropped an entry (checked without copying)
		for p, e := range rc.entries {
			if !keep(p, e) {
				rc.dirty = true
				break
			}
		}
		if !rc.dirty {
			return
		}
	}
	f := &cacheFile{RootSeq: root.Seq, RootSum: root.sum, Entries: make(map[string]cacheEntry, len(rc.entries))}
	for p, e := range rc.entries {
		if keep(p, e) {
			f.Entries[p] = e
		}
	}
	if err := c.keys.writeCache(c.opts.Cache, f); err != nil {
		c.log.Warn("put cache not saved (the next put reads records)", "file", c.opts.Cache.Path, "err", err)
	}
}

// viewHash is the hash of the record at path as this command sees it: written by it, or
// listed by the root.
func (c *Client) viewHash(path string) ([32]byte, bool) {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	if d, changed := c.view.delta[path]; changed {
		if d == nil {
			return [32]byte{}, false
		}
		return *d, true
	}
	if c.view.root == nil {
		return [32]byte{}, false
	}
	h, ok := c.view.root.Entries[path]
	return h, ok
}

// lookup returns the entry for path if the record this command sees there is the one the
// entry describes.
func (rc *runCache) lookup(c *Client, path string) (cacheEntry, bool) {
	if rc == nil || c.opts.Force {
		return cacheEntry{}, false
	}
	rc.mu.Lock()
	e, ok := rc.entries[path]
	rc.mu.Unlock()
	if !ok {
		return e, false
	}
	h, ok := c.viewHash(path)
	return e, ok && h == e.Hash
}

// rootHasDir reports whether the root lists records below the encrypted path dir: a
// directory is stored there.
func (rc *runCache) rootHasDir(c *Client, dir string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.dirs == nil {
		rc.dirs = map[string]bool{}
		for _, p := range c.rootPaths("") {
			for i := strings.IndexByte(p, '/'); i >= 0; {
				rc.dirs[p[:i]] = true
				j := strings.IndexByte(p[i+1:], '/')
				if j < 0 {
					break
				}
				i += 1 + j
			}
		}
	}
	return rc.dirs[dir]
}

// file says whether the record at recPath (encDir/encName.key) describes the local file fi
// (from the walk's lstat).
func (rc *runCache) file(c *Client, encDir, encName string, fi fs.FileInfo) (cacheVerdict, cacheEntry) {
	e, ok := rc.lookup(c, storage.Join(encDir, encName+keySuffix))
	if !ok || e.Type != typeFile {
		return cacheUnknown, e
	}
	ctime, ino, dev, known := statIDs(fi)
	switch {
	case e.Size != uint64(fi.Size()) || e.MTime != fi.ModTime().UnixNano() || e.Mode != unixMode(fi.Mode()):
		return cacheUnknown, e // changed as the record tells: stored anew, its chunks reused
	case !known || e.CTime == racyCTime || e.CTime != ctime || e.Ino != ino || e.Dev != dev:
		return cacheSuspect, e // changed unseen, or read within a timestamp tick of a change
	case e.Flags&cacheRandomKey != 0 && c.ks.kd != nil:
		return cacheUnknown, e // stored under random keys: stored again for dedup
	case rc.rootHasDir(c, storage.Join(encDir, encName)):
		return cacheUnknown, e // a directory too: the slow path reports it
	}
	return cacheSame, e
}

// same reports whether the record at path is r as far as put compares a directory or
// symlink record (kind, mode, mtime, target).
func (rc *runCache) same(c *Client, path string, r *record) bool {
	e, ok := rc.lookup(c, path)
	return ok && e.Type == r.Type && e.Mode == r.Mode && e.MTime == r.MTime && e.Target == r.Target
}

// dirSame reports whether the directory at the encrypted path enc is stored with the
// metadata record r, and no file record has its name.
func (rc *runCache) dirSame(c *Client, enc string, r *record) bool {
	if !rc.same(c, storage.Join(enc, dirMetaName), r) {
		return false
	}
	_, isFile := c.viewHash(enc + keySuffix)
	return enc == "" || !isFile
}

// linkSame reports whether the symlink record r is stored at encDir/encName, and no
// directory has its name.
func (rc *runCache) linkSame(c *Client, encDir, encName string, r *record) bool {
	return rc.same(c, storage.Join(encDir, encName+keySuffix), r) && !rc.rootHasDir(c, storage.Join(encDir, encName))
}

// note remembers that the record at path (as this command sees it) is r, a directory or
// symlink record (fi nil), or a file's from the local file fi whose content was not read
// (noted racy: the next put reads it).
func (rc *runCache) note(c *Client, path string, r *record, fi fs.FileInfo) {
	rc.noteRead(c, path, r, fi, time.Time{})
}

// noteRead remembers that the record at path (as this command sees it) is r, stored from
// the local entry fi (nil: not a regular file), whose content this command began to read
// at read (after fi was taken). A file entry is noted racy unless fi's mtime and ctime are
// older than read by racyMargin (racy): the next put reads the file again.
func (rc *runCache) noteRead(c *Client, path string, r *record, fi fs.FileInfo, read time.Time) {
	if rc == nil || r.Type != typeFile && r.Type != typeDir && r.Type != typeSymlink {
		return
	}
	h, ok := c.viewHash(path)
	if !ok {
		return
	}
	e := cacheEntry{Hash: h, Type: r.Type, Mode: r.Mode, MTime: r.MTime, Size: r.Size,
		Chunks: uint32(len(r.Chunks)), Target: r.Target}
	for _, ch := range r.Chunks {
		if ch.Flags&flagRandomKey != 0 {
			e.Flags |= cacheRandomKey
		}
	}
	if r.Type == typeFile {
		var known bool
		if e.CTime, e.Ino, e.Dev, known = statIDs(fi); !known {
			return
		}
		if racy(fi, read) {
			e.CTime = racyCTime
		}
	}
	rc.mu.Lock()
	if old, had := rc.entries[path]; !had || old != e {
		rc.entries[path], rc.dirty = e, true
	}
	rc.mu.Unlock()
}

// statIDs returns a file's status change time (ns), inode and device from an lstat result.
func statIDs(fi fs.FileInfo) (ctime int64, ino, dev uint64, ok bool) {
	if fi == nil {
		return 0, 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, 0, false
	}
	return st.Ctim.Nano(), st.Ino, uint64(st.Dev), true
}
