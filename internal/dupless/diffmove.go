package dupless

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"strings"
)

// Moves in a diff between snapshots: a file removed under one name and added under
// another with the same record content is one file moved or renamed ("moved", printed
// "R OLD -> NEW"), and a folder whose every entry arrived at the same place below a new
// folder is one folder moved. A root lists record hashes only, and a record is sealed for
// its path, so the hashes of a moved file differ: the records of the candidates are read
// (only those, and only when both sides have some). No format is involved.

// moveScanAll is how many removed and added files together a diff reads every record of;
// above it, only files that kept their name or their folder are candidates (a file both
// renamed and moved to another folder then stays "-" and "+").
const moveScanAll = 1000

// moveChanges returns the changes of the removed files gone, added files made (encrypted
// record paths: gone listed by a, made by b), removed folders goneDirs and added folders
// madeDirs (encrypted): a "moved" change for each file that is one of gone under a name of
// made, and for each folder moved whole (the outermost only; nothing is listed below it),
// "removed" and "added" for the rest.
func (c *Client) moveChanges(ctx context.Context, a, b *treeRoot, gone, made []string, goneDirs, madeDirs map[string]bool) ([]Change, error) {
	pairs, err := c.pairMoves(ctx, a, b, gone, made)
	if err != nil {
		return nil, err
	}
	folders := folderMoves(a, b, pairs, goneDirs, madeDirs)
	inMoved := map[string]bool{} // both ends of the folder moves
	var out []Change
	for d, e := range folders {
		inMoved[d], inMoved[e] = true, true
		out = append(out, Change{Path: c.plainDir(e), From: c.plainDir(d), Kind: "moved", IsDir: true})
	}
	arrived := map[string]bool{}
	for old, nw := range pairs {
		arrived[nw] = true
		if !insideAny(old, inMoved) {
			out = append(out, Change{Path: c.describe(nw), From: c.describe(old), Kind: "moved"})
		}
	}
	for _, p := range gone {
		if _, moved := pairs[p]; !moved && !insideAny(p, inMoved) {
			out = append(out, Change{Path: c.describe(p), Kind: "removed"})
		}
	}
	for _, p := range made {
		if !arrived[p] && !insideAny(p, inMoved) {
			out = append(out, Change{Path: c.describe(p), Kind: "added"})
		}
	}
	for d := range goneDirs {
		if !inMoved[d] && !insideAny(d, inMoved) {
			out = append(out, Change{Path: c.plainDir(d), Kind: "removed", IsDir: true})
		}
	}
	for d := range madeDirs {
		if !inMoved[d] && !insideAny(d, inMoved) {
			out = append(out, Change{Path: c.plainDir(d), Kind: "added", IsDir: true})
		}
	}
	return out, nil
}

// insideAny reports whether the encrypted path p lies inside one of the folders dirs.
func insideAny(p string, dirs map[string]bool) bool {
	in := false
	eachParent(p, func(d string) { in = in || dirs[d] })
	return in
}

// pairMoves maps each file of gone that is one of made under another name to it: the two
// records have the same content and metadata (contentKey). Among several of the same
// content, each of made (in path order) takes the one of gone whose path ends the same way
// in the most components (its name, then its folders' names), the first in path order on
// a tie; the others stay removed or added. A record that cannot be read pairs with none.
func (c *Client) pairMoves(ctx context.Context, a, b *treeRoot, gone, made []string) (map[string]string, error) {
	if len(gone) == 0 || len(made) == 0 {
		return nil, nil
	}
	if len(gone)+len(made) > moveScanAll {
		gone, made = plausibleMoves(gone, made)
	}
	kg, err := c.contentKeys(ctx, a, gone)
	if err != nil {
		return nil, err
	}
	km, err := c.contentKeys(ctx, b, made)
	if err != nil {
		return nil, err
	}
	goneBy := map[[32]byte][]string{}
	for i, p := range gone {
		if kg[i] != nil {
			goneBy[*kg[i]] = append(goneBy[*kg[i]], p)
		}
	}
	madeBy := map[[32]byte][]string{}
	for i, p := range made {
		if km[i] != nil && goneBy[*km[i]] != nil {
			madeBy[*km[i]] = append(madeBy[*km[i]], p)
		}
	}
	pairs := map[string]string{}
	for k, ms := range madeBy {
		c.pairGroup(goneBy[k], ms, pairs)
	}
	return pairs, nil
}

// pairGroup pairs files of one content (pairMoves).
func (c *Client) pairGroup(gs, ms []string, pairs map[string]string) {
	c.sortPlain(gs)
	c.sortPlain(ms)
	taken := make([]bool, len(gs))
	for _, m := range ms {
		best, score := -1, -1
		for i, g := range gs {
			if s := commonTail(g, m); !taken[i] && s > score {
				best, score = i, s
			}
		}
		if best < 0 {
			return
		}
		taken[best] = true
		pairs[gs[best]] = m
	}
}

// sortPlain sorts encrypted record paths by their plain paths.
func (c *Client) sortPlain(ps []string) {
	plain := make(map[string]string, len(ps))
	for _, p := range ps {
		plain[p] = c.describe(p)
	}
	sort.Slice(ps, func(i, j int) bool { return plain[ps[i]] < plain[ps[j]] })
}

// commonTail is how many trailing components the paths p and q share (names encrypt
// alike, so the encrypted paths tell).
func commonTail(p, q string) int {
	a, b := strings.Split(p, "/"), strings.Split(q, "/")
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// plausibleMoves keeps of gone and made the files that have a name or a folder in common
// with one of the other side (moveScanAll).
func plausibleMoves(gone, made []string) ([]string, []string) {
	names, dirs := map[string]bool{}, map[string]bool{}
	for _, p := range gone {
		d, n := splitLast(p)
		names[n], dirs[d] = true, true
	}
	var m2 []string
	mnames, mdirs := map[string]bool{}, map[string]bool{}
	for _, p := range made {
		if d, n := splitLast(p); names[n] || dirs[d] {
			m2 = append(m2, p)
			mnames[n], mdirs[d] = true, true
		}
	}
	var g2 []string
	for _, p := range gone {
		if d, n := splitLast(p); mnames[n] || mdirs[d] {
			g2 = append(g2, p)
		}
	}
	return g2, m2
}

// contentKeys reads the record r lists at each of paths, in parallel, and returns its
// contentKey (nil for a record that cannot be read).
func (c *Client) contentKeys(ctx context.Context, r *treeRoot, paths []string) ([]*[32]byte, error) {
	keys := make([]*[32]byte, len(paths))
	work, finish := workers(c, func(i int) {
		if rec, err := c.recordIn(ctx, paths[i], r.Entries[paths[i]]); err == nil {
			k := contentKey(rec)
			keys[i] = &k
		}
	})
	for i := range paths {
		select {
		case work <- i:
		case <-ctx.Done():
		}
	}
	finish()
	return keys, ctx.Err()
}

// contentKey identifies what a record holds apart from its name: kind, mode, modification
// time, size, link target, device number and chunks (a mv keeps all of them; the key id
// may differ for the same chunks, and is left out, as the chunks' keys).
func contentKey(r *record) [32]byte {
	h := sha256.New()
	var b []byte
	b = append(b, r.Type)
	b = binary.BigEndian.AppendUint32(b, r.Mode)
	b = binary.BigEndian.AppendUint64(b, uint64(r.MTime))
	b = binary.BigEndian.AppendUint64(b, r.Size)
	b = binary.BigEndian.AppendUint64(b, r.Rdev)
	b = binary.BigEndian.AppendUint64(b, uint64(len(r.Target)))
	b = append(b, r.Target...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(r.Chunks)))
	h.Write(b)
	for _, ch := range r.Chunks {
		h.Write(ch.Digest[:])
		h.Write(binary.BigEndian.AppendUint32(nil, ch.PlainLen))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// folderMoves returns the folders of goneDirs moved whole to one of madeDirs: every entry
// a lists below d (files and folder records) is at its place below e in b (a file as the
// one moved there, by pairs), b lists nothing else below e, and at least one file moved.
// Only the outermost such folders are returned (old to new, encrypted).
func folderMoves(a, b *treeRoot, pairs map[string]string, goneDirs, madeDirs map[string]bool) map[string]string {
	if len(pairs) == 0 {
		return nil
	}
	dest, bad := map[string]string{}, map[string]bool{}
	for old, nw := range pairs {
		eachParent(old, func(d string) {
			if !goneDirs[d] || bad[d] {
				return
			}
			e, ok := strings.CutSuffix(nw, old[len(d):])
			if !ok || !madeDirs[e] || dest[d] != "" && dest[d] != e {
				bad[d] = true
				return
			}
			dest[d] = e
		})
	}
	count := map[string]int{}
	for p := range a.Entries {
		eachParent(p, func(d string) {
			e, ok := dest[d]
			if !ok || bad[d] {
				return
			}
			there := e + p[len(d):]
			if _, listed := b.Entries[there]; !listed || !isDirMeta(p) && pairs[p] != there {
				bad[d] = true
			}
			count[d]++
		})
	}
	arrived := map[string]int{}
	for p := range b.Entries {
		eachParent(p, func(e string) {
			if madeDirs[e] {
				arrived[e]++
			}
		})
	}
	whole := map[string]bool{}
	for d, e := range dest {
		whole[d] = !bad[d] && count[d] == arrived[e]
	}
	out := map[string]string{}
	for d, e := range dest {
		outer := true
		eachParent(d, func(p string) { outer = outer && !whole[p] })
		if whole[d] && outer {
			out[d] = e
		}
	}
	return out
}

// eachParent calls f with each folder above the encrypted path p, innermost first (not
// the root).
func eachParent(p string, f func(dir string)) {
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		f(p[:i])
	}
}
