package dupless

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/veil-project/veil/internal/atomicfile"
)

// The tree bases this device read or wrote are kept beside its put cache
// (<cache>/<location hash>.bases/<base id>) as they are stored: sealed, and used only when
// their SHA-256 is the one the authenticated root names, so a copy that is damaged, or
// another base's, is read from the storage again (and replaced). A command in a large
// namespace then reads its small root and no base: a lone put into a namespace of 5,000
// files no longer GETs ~300 KB of base. The newest baseDiskMax are kept.

const baseDiskMax = 4

func baseDiskDir(pc *PutCache) string { return strings.TrimSuffix(pc.Path, ".put") + ".bases" }

// diskBase returns this device's copy of base id if its SHA-256 is sum, else nil (and a
// copy that is not removes it).
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
	return b
}

// keepBaseOnDisk stores this device's copy of a base (best effort: it is a cache), and
// removes the oldest copies past baseDiskMax.
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
	if err != nil || len(ents) <= baseDiskMax {
		return
	}
	type aged struct {
		name string
		mod  int64
	}
	var all []aged
	for _, e := range ents {
		if fi, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod > all[j].mod })
	for _, a := range all[min(len(all), baseDiskMax):] {
		os.Remove(filepath.Join(dir, a.name))
	}
}
