package dupless

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/veil-project/veil/internal/storage"
)

// Gap marks (docs/formats/key-record.md, "Tree root"). A command finds the newest root by
// reading forward from the one it remembers and stopping at the first absent number
// (rootprobe.go); that is sound only if a present root whose successor is absent is the
// newest. Forget keeps it so: where it drops the successor of a kept root that is not the
// newest, it leaves an empty object under that number (a gap mark), and a reader meeting a
// mark lists the roots instead. Marks are written before any root is deleted and roots
// are deleted oldest first, so a probing reader never sees a root, then an absent number,
// with a newer root above at any moment of a forget. A mark whose predecessor a later
// forget drops is deleted (a reader remembering that predecessor finds it absent and lists).

// rootNumbers lists the numbers under .veil/roots (roots and gap marks).
func (c *Client) rootNumbers(ctx context.Context) ([]uint64, error) {
	infos, err := c.be.List(ctx, rootsDir)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list tree roots: %w", err)
	}
	var out []uint64
	for _, i := range infos {
		if s, ok := parseRootName(i.Name); ok && !i.IsDir {
			out = append(out, s)
		}
	}
	return out, nil
}

// dropRoots deletes the snapshots (oldest first) keep does not keep, leaving gap marks
// where needed; listed are the numbers listed before the roots were read.
func (c *Client) dropRoots(ctx context.Context, listed []uint64, snaps []Snapshot, keep []bool) error {
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
	for _, s := range marks {
		if err := c.be.Put(ctx, rootsDir, rootName(s), bytesReader(nil), 0); err != nil {
			return fmt.Errorf("mark forgotten snapshot %d: %w", s, err)
		}
	}
	for i, s := range snaps {
		if keep[i] || need[s.Seq] {
			continue
		}
		if err := c.be.Delete(ctx, rootsDir, rootName(s.Seq)); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("drop snapshot %d: %w", s.Seq, err)
		}
	}
	for _, s := range listed { // marks of earlier forgets no longer needed
		if !held[s] && !need[s] && s < newest {
			if err := c.be.Delete(ctx, rootsDir, rootName(s)); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("drop gap mark %d: %w", s, err)
			}
		}
	}
	return nil
}
