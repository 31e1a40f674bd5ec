package dupless

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Damaged snapshots: a retained root, other than the newest, that fails authentication
// (its object, or the tree base it names, damaged or missing: ErrIntegrity). Found by
// review: every command reading all the snapshots (forget, prune, check, log, stats)
// stopped on the first one, so one damaged old snapshot, or one lost base many share,
// blocked even the forget that would drop it. Check now reports each as damage and goes
// on; 'forget --drop-damaged' drops them as it drops any root (gap marks, forgetmarks.go);
// the others still stop, naming them. The newest root damaged stays an error: nothing
// here sets it aside (it is the namespace, and drops nothing without a newer one).

// DamagedSnapshot is a retained snapshot whose tree root (or base) cannot be read.
type DamagedSnapshot struct {
	Seq uint64 `json:"snapshot"`
	Err string `json:"error"`
}

// maxDamagedNamed bounds the damaged snapshots an error names (then a count).
const maxDamagedNamed = 5

// loadRootsDamaged is loadRoots setting aside, as damaged, the roots older than the newest
// readable one that fail with ErrIntegrity. A damaged root newer than every readable one
// (the newest, or one a lock-free put published since) is the error, as any other failure.
func (c *Client) loadRootsDamaged(ctx context.Context) ([]*treeRoot, []DamagedSnapshot, error) {
	written, marks, err := c.rootObjects(ctx)
	if err != nil {
		return nil, nil, err
	}
	var seqs []uint64
	for s := range written {
		if !marks[s] {
			seqs = append(seqs, s)
		}
	}
	c.view.mu.Lock()
	newest := c.view.newest
	c.view.mu.Unlock()
	type loaded struct {
		root *treeRoot
		seq  uint64
		bad  error // ErrIntegrity
	}
	all, err := loadEach(ctx, seqs, 8, func(s uint64) (loaded, bool) {
		return loaded{root: newest}, newest != nil && newest.Seq == s
	}, func(ctx context.Context, s uint64) (loaded, error) {
		r, err := c.fetchRootSeq(ctx, s)
		if errors.Is(err, ErrIntegrity) {
			return loaded{seq: s, bad: err}, nil
		}
		return loaded{root: r}, err
	})
	if err != nil {
		return nil, nil, err
	}
	var roots []*treeRoot
	var bad []loaded
	for _, l := range all {
		if l.bad != nil {
			bad = append(bad, l)
		} else {
			roots = append(roots, l.root)
		}
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].Seq < roots[j].Seq })
	sort.Slice(bad, func(i, j int) bool { return bad[i].seq < bad[j].seq })
	var damaged []DamagedSnapshot
	for _, l := range bad {
		if len(roots) == 0 || l.seq > roots[len(roots)-1].Seq {
			return nil, nil, l.bad // the newest root: damaged as before
		}
		damaged = append(damaged, DamagedSnapshot{Seq: l.seq, Err: l.bad.Error()})
	}
	return roots, damaged, nil
}

// errDamagedSnapshots is the one-line error of a command that must read every snapshot
// and met damaged ones: it names them (the first few, then a count) and the way out.
func errDamagedSnapshots(d []DamagedSnapshot) error {
	var nums []string
	for i, s := range d {
		if i == maxDamagedNamed {
			nums = append(nums, fmt.Sprintf("and %d more", len(d)-i))
			break
		}
		nums = append(nums, fmt.Sprint(s.Seq))
	}
	what, it := "snapshot "+nums[0]+" is", "it"
	if len(d) > 1 {
		what, it = "snapshots "+strings.Join(nums, ", ")+" are", "them"
	}
	return fmt.Errorf("%w: %s damaged (%s); 'veil forget --drop-damaged' drops %s ('veil check' names each)",
		ErrIntegrity, what, damageReason(d[0].Err), it)
}

// damageReason is an integrity error's text without ErrIntegrity's own words, which the
// line it goes in says already.
func damageReason(msg string) string { return strings.TrimPrefix(msg, ErrIntegrity.Error()+": ") }
