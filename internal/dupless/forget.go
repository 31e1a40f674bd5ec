package dupless

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
)

// Policy says which snapshots 'forget' keeps, as restic's forget does: the newest Last
// ones, the newest one of each of the newest Hourly hours, Daily days, Weekly ISO weeks,
// Monthly months and Yearly years (local time), and all taken within Within of the newest.
// The newest snapshot is always kept. DropDamaged also drops every damaged snapshot but
// the newest (rootsdamaged.go), which forget otherwise refuses to go past; alone, with no
// --keep option, it keeps every readable snapshot.
type Policy struct {
	Last, Hourly, Daily, Weekly, Monthly, Yearly int
	Within                                       time.Duration
	DropDamaged                                  bool
}

// Empty reports whether the policy names nothing to keep or drop (forget refuses it).
func (p Policy) Empty() bool {
	return p.keepsAll() && !p.DropDamaged
}

// keepsAll reports whether the policy has no --keep option.
func (p Policy) keepsAll() bool {
	return p.Last <= 0 && p.Hourly <= 0 && p.Daily <= 0 && p.Weekly <= 0 && p.Monthly <= 0 && p.Yearly <= 0 && p.Within <= 0
}

// ForgetResult lists the snapshots kept and those dropped (or, in a dry run, to drop),
// the damaged ones apart.
type ForgetResult struct {
	Keep    []Snapshot        `json:"keep"`
	Remove  []Snapshot        `json:"remove"`
	Damaged []DamagedSnapshot `json:"remove_damaged"`
}

// keep returns, for snapshots sorted oldest first, which ones the policy keeps.
func (p Policy) keep(snaps []Snapshot) []bool {
	keep := make([]bool, len(snaps))
	if len(snaps) == 0 {
		return keep
	}
	if p.keepsAll() { // --drop-damaged alone
		for i := range keep {
			keep[i] = true
		}
		return keep
	}
	keep[len(snaps)-1] = true
	buckets := []struct {
		n   int
		key func(t time.Time) string
	}{
		{p.Last, func(t time.Time) string { return t.Format(time.RFC3339Nano) + "\x00" }},
		{p.Hourly, func(t time.Time) string { return t.Format("2006-01-02 15") }},
		{p.Daily, func(t time.Time) string { return t.Format(time.DateOnly) }},
		{p.Weekly, func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprint(y, "-", w) }},
		{p.Monthly, func(t time.Time) string { return t.Format("2006-01") }},
		{p.Yearly, func(t time.Time) string { return t.Format("2006") }},
	}
	for bi, b := range buckets {
		left, last := b.n, ""
		for i := len(snaps) - 1; i >= 0 && left > 0; i-- {
			k := b.key(snaps[i].Time.Local())
			if bi == 0 {
				k = fmt.Sprint(i) // every snapshot is its own bucket for --keep-last
			}
			if k != last {
				keep[i], last = true, k
				left--
			}
		}
	}
	if p.Within > 0 {
		from := snaps[len(snaps)-1].Time.Add(-p.Within)
		for i, s := range snaps {
			if !s.Time.Before(from) {
				keep[i] = true
			}
		}
	}
	return keep
}

// Forget drops the snapshots the policy does not keep (under the exclusive lock, like
// prune). The records and chunks only they referenced stay until Prune. A damaged
// snapshot other than the newest stops it, named, unless p.DropDamaged: then it is
// dropped too, and listed in Damaged.
func (c *Client) Forget(ctx context.Context, p Policy, dryRun bool) (_ *ForgetResult, err error) {
	if p.Empty() {
		return nil, errors.New("forget needs a policy: at least one of --keep-last, --keep-hourly, --keep-daily, --keep-weekly, --keep-monthly, --keep-yearly, --keep-within, --drop-damaged")
	}
	unlock, err := c.lock(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlockInto(&err, unlock)
	written, err := c.rootListing(ctx) // before the roots are read: gap marks are what is not a root
	if err != nil {
		return nil, err
	}
	roots, damaged, err := c.loadRootsDamaged(ctx)
	if err != nil {
		return nil, err
	}
	if len(damaged) > 0 && !p.DropDamaged {
		return nil, errDamagedSnapshots(damaged)
	}
	snaps := make([]Snapshot, len(roots))
	for i, r := range roots {
		snaps[i] = snapshotOf(r)
	}
	res := &ForgetResult{Keep: []Snapshot{}, Remove: []Snapshot{}, Damaged: damaged}
	if res.Damaged == nil {
		res.Damaged = []DamagedSnapshot{}
	}
	keep := p.keep(snaps)
	for i, k := range keep {
		if k {
			res.Keep = append(res.Keep, snaps[i])
		} else {
			res.Remove = append(res.Remove, snaps[i])
		}
	}
	if dryRun {
		return res, nil
	}
	// The damaged roots are dropped as the policy's are: all older than the newest
	// (loadRootsDamaged), by number, in order among the others.
	for _, d := range damaged {
		snaps, keep = append(snaps, Snapshot{Seq: d.Seq}), append(keep, false)
	}
	idx := make([]int, len(snaps))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return snaps[idx[a]].Seq < snaps[idx[b]].Seq })
	ordered, orderedKeep := make([]Snapshot, len(idx)), make([]bool, len(idx))
	for i, j := range idx {
		ordered[i], orderedKeep[i] = snaps[j], keep[j]
	}
	return res, c.dropRoots(ctx, written, ordered, orderedKeep)
}
