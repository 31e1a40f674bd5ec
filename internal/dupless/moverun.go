package dupless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/veil-project/veil/internal/storage"
)

// What a rerun of an interrupted mv finds and finishes (move.go): files moved already,
// records written but listed by no root, files the destination holds in another version.

// movedAlready looks at the record object at the file to: found if there is one, same if
// it opens under its path to the record from lists (then it is listed by this command's
// root: a killed mv may have written it without publishing).
func (c *Client) movedAlready(ctx context.Context, from, to string) (found, same bool, err error) {
	sd, sn, err := c.encFile(from)
	if err != nil {
		return false, false, err
	}
	dd, dn, err := c.encFile(to)
	if err != nil {
		return false, false, err
	}
	same, err = c.sameRecord(ctx, storage.Join(sd, sn+keySuffix), storage.Join(dd, dn+keySuffix))
	if errors.Is(err, storage.ErrNotFound) {
		return false, false, nil
	}
	return err == nil, same, err
}

// sameRecord reports whether the record object at q opens under its path to the record the
// root lists at p (read from p, or from its kept version when p is gone); if so, q is
// noted for this command's root. storage.ErrNotFound: nothing at q.
func (c *Client) sameRecord(ctx context.Context, p, q string) (bool, error) {
	qd, qn := storage.Split(q)
	b, err := c.getObject(ctx, qd, qn)
	if err != nil {
		return false, err
	}
	dr, err := c.keys.openRecord(b, q)
	if err != nil {
		return false, nil // not this key's record, or damaged: not the file moved
	}
	pd, pn := storage.Split(p)
	sr, err := c.readRecord(ctx, pd, pn)
	if err != nil {
		return false, fmt.Errorf("%s: %w", c.describe(p), err)
	}
	if !bytes.Equal(sr.marshal(), dr.marshal()) {
		return false, nil
	}
	c.noteRecord(q, b)
	return true, nil
}

// listUnlisted lists, in this command's root, the record of the file path when the root
// lists none there and it opens under its path: a killed mv's, which moved it there (and
// maybe deleted the source) before another device stored a new file at the source. Found
// by review: kept in the destination by the rerun, it was listed by no root (unreadable,
// its reads saying to run the command again, and no later rerun adopted it).
func (c *Client) listUnlisted(ctx context.Context, path string) error {
	d, n, err := c.encFile(path)
	if err != nil {
		return err
	}
	q := storage.Join(d, n+keySuffix)
	if _, listed := c.rootHash(q); listed {
		return nil
	}
	b, err := c.getObject(ctx, d, n+keySuffix)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := c.keys.openRecord(b, q); err == nil {
		c.noteRecord(q, b)
	}
	return nil
}

// adoptMoved lists, in this command's root, what a killed mv from encSrc to encDst moved
// before it could publish its root: every record the root lists below encSrc that is gone
// from there (seen: what the walk found there) and whose copy, the same record, is at its
// place below encDst. A file whose place below encDst holds another version (another
// device stored one there since) goes back to its place below src, from its kept version,
// and is returned (relative to src) as kept; found by review: the rerun said it was done,
// and the file, listed below src, was in no folder ls showed. Any other record the root
// lists and the storage lacks stays listed, for check to report.
func (c *Client) adoptMoved(ctx context.Context, src, encSrc, encDst string, seen map[string]bool) (back []string, err error) {
	for _, p := range c.rootPaths(encSrc) {
		if seen[p] {
			continue
		}
		pd, pn := storage.Split(p)
		if _, err := c.be.Stat(ctx, pd, pn); err == nil {
			continue // still there: src's own record, moved below
		} else if !errors.Is(err, storage.ErrNotFound) {
			return nil, err
		}
		q := encDst + strings.TrimPrefix(p, encSrc)
		same, err := c.sameRecord(ctx, p, q)
		switch {
		case same:
			c.noteDeleted(p)
		case err == nil && !isDirMeta(p): // another version at q
			r, err := c.readRecord(ctx, pd, pn)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.describe(p), err)
			}
			if _, err := c.writeRecord(ctx, pd, pn, r); err != nil {
				return nil, err
			}
			back = append(back, strings.TrimPrefix(c.describe(p), src+"/"))
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return nil, err
		}
	}
	return back, nil
}

// finishFile finishes the mv of the file src to dst, which exists: when dst holds the same
// record as src's (the mv wrote it, then was cut off), src's copy is deleted, or, src being
// gone already (srcExists false), the root is made to list dst in its place. done is false
// when dst is another file.
func (c *Client) finishFile(ctx context.Context, src, dst string, srcExists bool) (done bool, err error) {
	sd, sn, err := c.encFile(src)
	if err != nil {
		return false, err
	}
	dd, dn, err := c.encFile(dst)
	if err != nil {
		return false, err
	}
	p, q := storage.Join(sd, sn+keySuffix), storage.Join(dd, dn+keySuffix)
	if _, listed := c.rootHash(p); !srcExists && !listed {
		return false, nil
	}
	// Both listed: two files, however alike (an interrupted mv publishes no state with
	// both: moveRecord's second step outlives a Ctrl-C, and a kill publishes neither).
	// Found by review: mv of a file onto an identical stored one removed the source.
	if _, listed := c.rootHash(q); srcExists && listed {
		return false, nil
	}
	same, err := c.sameRecord(ctx, p, q)
	if err != nil || !same {
		return false, err
	}
	if _, err := c.deleteRecord(ctx, sd, sn+keySuffix); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return false, err
	}
	return true, nil
}
