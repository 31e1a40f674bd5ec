package storeserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Move renames a file or a directory with everything below it, in one transaction. Every
// new path is checked against the limits, and the metadata bytes it adds (a longer
// prefix on every moved name) count against the quota: the work is O(the moved tree),
// which the quota bounds.
func (n *Namespace) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	return n.move(ctx, srcDir, srcName, dstDir, dstName, nil)
}

// MoveMatch is Move of a file whose content hashes to match, checked in the move's
// transaction after the source is found and before the destination is looked at:
// storage.ErrChanged, moving nothing, when the source is a directory or other content
// (storage.MatchMover). The DupLESS client's rm keeps a record as a version this way,
// in one request, only while it is the version its tree root lists.
func (n *Namespace) MoveMatch(ctx context.Context, srcDir, srcName, dstDir, dstName string, match [32]byte) error {
	return n.move(ctx, srcDir, srcName, dstDir, dstName, &match)
}

var _ storage.MatchMover = (*Namespace)(nil)

func (n *Namespace) move(ctx context.Context, srcDir, srcName, dstDir, dstName string, match *[32]byte) error {
	lim := n.s.cfg.Limits
	if err := lim.checkPath(srcDir, srcName); err != nil {
		return err
	}
	if err := lim.checkPath(dstDir, dstName); err != nil {
		return err
	}
	src, dst := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	now := time.Now().UnixNano()
	// What the move may add to the usage (quota.go): the new names of the entry and of the
	// directories it makes, and, when the path grows, a longer prefix on every name below
	// it: unknown before the transaction.
	var c *reservation
	if len(dst) > len(src) {
		c = n.claimUnbounded()
	} else {
		c = n.claim(dirCost(dstDir, 0) + max(0, metaCost(dstDir, dstName)-metaCost(srcDir, srcName)))
	}
	defer c.release()
	// Group commit (commit.go): concurrent moves, such as a client's mv or rm -r of many
	// records, share one fsync; the function changes nothing outside its transaction.
	err := n.s.meta.update(ctx, n.user, func(t metaTx) error {
		e, err := n.lookup(t, srcDir, srcName)
		if err != nil {
			return err
		}
		if match != nil && (e.isDir() || e.hash != *match) {
			return storage.ErrChanged
		}
		if _, ok, err := t.entry(n.user, dstDir, dstName); err != nil || ok {
			return firstErr(err, storage.ErrExists)
		}
		if e.isDir() && strings.HasPrefix(dst+"/", src+"/") {
			return fmt.Errorf("%w: a directory cannot move into itself", storage.ErrInvalidName)
		}
		if err := n.ensureDirs(t, dstDir, now); err != nil {
			return err
		}
		var below int64
		if e.isDir() {
			if below, err = n.checkSubtree(t, src, dst); err != nil {
				return err
			}
			if err := t.moveBelow(n.user, src, dst); err != nil {
				return err
			}
		}
		if err := t.deleteEntry(n.user, srcDir, srcName); err != nil {
			return err
		}
		if err := t.putEntry(n.user, dstDir, dstName, e); err != nil {
			return err
		}
		return n.moveAccounting(t, srcDir, srcName, dstDir, dstName, e.isDir(), below)
	})
	if err != nil {
		return fmt.Errorf("move %s to %s: %w", src, dst, err)
	}
	n.s.metrics.ops.WithLabelValues("move").Inc()
	return nil
}

// checkSubtree checks the new path of everything below directory src against the limits
// and returns how many entries move with it.
func (n *Namespace) checkSubtree(t metaTx, src, dst string) (int64, error) {
	var k int64
	err := t.below(n.user, src, "", func(d, nm string, _ entry) error {
		nd := dst + d[len(src):]
		if err := n.s.cfg.Limits.checkPath(nd, nm); err != nil {
			return fmt.Errorf("%s would become %.64q: %w", storage.Join(d, nm), nd+"/"+nm, err)
		}
		k++
		return nil
	})
	return k, err
}

// moveAccounting moves the entry counts (src's parent loses one, dst's gains one, a moved
// directory's counts follow it) and charges the metadata bytes the new names add.
func (n *Namespace) moveAccounting(t metaTx, srcDir, srcName, dstDir, dstName string, isDir bool, below int64) error {
	src, dst := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	if isDir {
		if err := t.moveDirCounts(n.user, src, dst); err != nil {
			return err
		}
	}
	if err := n.removeEntry(t, srcDir, srcName, false); err != nil {
		return err
	}
	if err := n.addEntry(t, dstDir, dstName); err != nil {
		return err
	}
	return n.charge(t, 0, below*int64(len(dst)-len(src)))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
