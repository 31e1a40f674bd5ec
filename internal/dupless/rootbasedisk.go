package dupless

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
)

// The tree bases this device read or wrote are kept beside its put cache
// (<cache>/<location hash>.bases/<base id>) as they are stored: sealed, and used only when
// their SHA-256 is the one the authenticated root names, so a copy that is damaged, or
// another base's, is read from the storage again (and replaced). A command in a large
// namespace then reads its small root and no base: a lone put into a namespace of 5,000
// files no longer GETs ~300 KB of base. The copies used most recently are kept (a copy's
// modification time is its last use), at most baseDiskMax of them and baseDiskBytes in
// all (the newest is kept whatever its size): the bases of a namespace's snapshots (a new
// one every few hundred changes) fit, so that a command reading every snapshot (prune,
// forget, log, check) reads each base from the storage once, not on every run as when
// only the newest 4 were kept.

// baseDiskMax and baseDiskBytes bound the copies kept; variables for tests.
var (
	baseDiskMax   = 64
	baseDiskBytes = int64(256 << 20)
)

func baseDiskDir(pc *PutCache) string { return strings.TrimSuffix(pc.Path, ".put") + ".bases" }

// diskBase returns this device's copy of base id if its SHA-256 is sum, else nil (and a
// copy that is not removes it). A copy used becomes the most recently used.
func (c *Client) diskBase(id [baseIDSize]byte, sum [32]byte) []byte {
	if c.opts.Cache == nil {
		return nil
	}
	p := filepath.Join(baseDiskDir(c.opts.Cache), baseName(id))
	b, err := readLocal("tree base copy", p, maxRootBytes)
	if err != nil || b == nil {
		return nil
	}
	if sha256.Sum256(b) != sum {
		os.Remove(p)
		return nil
	}
	now := time.Now()
	os.Chtimes(p, now, now) // best effort: a copy evicted early is read again
	return b
}

// keepBaseOnDisk stores this device's copy of a base (best effort: it is a cache), and
// removes the copies used least recently past baseDiskMax or baseDiskBytes.
func (c *Client) keepBaseOnDisk(id [baseIDSize]byte, sealed []byte) {
	if c.opts.Cache == nil {
		return
	}
	dir := baseDiskDir(c.opts.Cache)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	if err := atomicfile.Write(filepath.Join(dir, baseName(id)), sealed, 0o600, false); err != nil {
		c.log.Debug("keep a copy of the tree base", "err", err)
		return
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type aged struct {
		name string
		mod  int64
		size int64
	}
	var all []aged
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano(), fi.Size()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	var total int64
	for i, a := range all {
		total += a.size
		if i > 0 && (i >= baseDiskMax || total > baseDiskBytes) {
			os.Remove(filepath.Join(dir, a.name))
		}
	}
}
