package dupless

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Gap marks (docs/formats/key-record.md, "Tree root"). A command finds the newest root by
// reading forward from the one it remembers and stopping at the first absent number
// (rootprobe.go); that is sound only if a present root whose successor is absent is the
// newest. Forget keeps it so: where it drops the successor of a kept root that is not the
// newest, it leaves an empty object under that number (a gap mark), and a reader meeting a
// mark lists the roots instead. Marks are written before any root is dropped, so a probing
// reader never sees a root, then an absent number, with a newer root above at any moment
// of a forget.
//
// A lock-free put (putlockless.go) relies on more: having read root n, it creates n+1,
// and that create succeeding must mean n was the newest. A forget that dropped n and n+1
// between the put's read and its batch would free n+1 under it (found by review: the put
// then replaced a newer version of its file, which no root kept). So every root forget
// drops becomes a gap mark, never an absent number, and a mark no kept root needs is
// deleted only once its predecessor has been no root for at least markGrace; a lock-free
// put sends its batch within locklessMaxAge of reading its root, or goes under the lock.

// markGrace is how long a gap mark that no kept root needs stays (by its ModTime, against
// the storage's clock: storageNow).
const markGrace = 24 * time.Hour

// rootNumbers lists the numbers under .veil/roots (roots and gap marks), in order.
func (c *Client) rootNumbers(ctx context.Context) ([]uint64, error) {
	written, _, err := c.rootObjects(ctx)
	return slices.Sorted(maps.Keys(written)), err
}

// rootListing lists the numbers under .veil/roots with the time each was last written.
func (c *Client) rootListing(ctx context.Context) (map[uint64]time.Time, error) {
	written, _, err := c.rootObjects(ctx)
	return written, err
}

// rootObjects lists the numbers under .veil/roots with the time each was last written,
// and the numbers the listing shows empty: gap marks, which readers of every root
// (loadRoots) need not fetch. A listing that hides a root (as empty or not at all) hides
// it either way; what is fetched is still authenticated.
func (c *Client) rootObjects(ctx context.Context) (written map[uint64]time.Time, marks map[uint64]bool, err error) {
	written, sizes, err := c.rootSizes(ctx)
	if err != nil || written == nil {
		return nil, nil, err
	}
	marks = map[uint64]bool{}
	for s, n := range sizes {
		if n == 0 {
			marks[s] = true
		}
	}
	return written, marks, nil
}

// rootSizes is rootObjects giving each number's object size (0: a gap mark).
func (c *Client) rootSizes(ctx context.Context) (written map[uint64]time.Time, sizes map[uint64]int64, err error) {
	infos, err := c.be.List(ctx, rootsDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list tree roots: %w", err)
	}
	written, sizes = map[uint64]time.Time{}, map[uint64]int64{}
	for _, i := range infos {
		if s, ok := parseRootName(i.Name); ok && !i.IsDir {
			written[s], sizes[s] = i.ModTime, i.Size
		}
	}
	return written, sizes, nil
}

// dropRoots replaces the snapshots keep does not keep by gap marks (oldest first), after
// the marks kept roots need; written holds the numbers listed before the roots were read,
// with when each was written. A mark of an earlier forget that no kept root needs is deleted
// once it and its predecessor's mark (if any) are older than markGrace (a zero time: never).
func (c *Client) dropRoots(ctx context.Context, written map[uint64]time.Time, snaps []Snapshot, keep []bool) error {
	if len(snaps) == 0 {
		return nil
	}
	newest := snaps[len(snaps)-1].Seq
	kept, held := map[uint64]bool{}, map[uint64]bool{}
	for i, s := range snaps {
		held[s.Seq] = true
		kept[s.Seq] = keep[i]
	}
	need := map[uint64]bool{}
	var marks []uint64
	for s, k := range kept {
		if k && s != newest && !kept[s+1] {
			need[s+1] = true
			marks = append(marks, s+1)
		}
	}
	slices.Sort(marks)
	mark := func(s uint64, what string) error {
		if err := c.be.Put(ctx, rootsDir, rootName(s), bytesReader(nil), 0); err != nil {
			return fmt.Errorf("%s %d: %w", what, s, err)
		}
		return nil
	}
	for _, s := range marks {
		if err := mark(s, "mark forgotten snapshot"); err != nil {
			return err
		}
	}
	for i, s := range snaps {
		if keep[i] || need[s.Seq] {
			continue
		}
		if err := mark(s.Seq, "drop snapshot"); err != nil {
			return err
		}
	}
	now := c.storageNow()
	old := func(s uint64) bool { w := written[s]; return !w.IsZero() && now.Sub(w) >= markGrace }
	isListed := func(s uint64) bool { _, ok := written[s]; return ok }
	for _, s := range slices.Sorted(maps.Keys(written)) { // marks of earlier forgets no longer needed
		// A mark goes once it is old and so is the end of its predecessor as a root: a
		// put that read s-1 may create s only while s-1 is a root, or was until lately (a
		// mark written when s-1 was dropped dates that; an absent number was a mark as old
		// before it went). Its own age alone would not do: a mark a kept root needed can
		// be old when the forget that drops that root comes (found by review).
		if held[s] || need[s] || s >= newest || !old(s) || held[s-1] || isListed(s-1) && !old(s-1) {
			continue
		}
		if err := c.be.Delete(ctx, rootsDir, rootName(s)); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("drop gap mark %d: %w", s, err)
		}
	}
	return nil
}
