package dupless

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// The writing side of tree roots: a changing command tracks the records it writes and
// deletes, and publishes the next root when it ends (docs/formats/key-record.md).

// noteRecord and noteDeleted record this command's changes for the next root.
func (c *Client) noteRecord(path string, b []byte) {
	if strings.HasPrefix(path, veilDir+"/") {
		return
	}
	h := sha256.Sum256(b)
	c.view.mu.Lock()
	if c.view.tracking {
		c.view.delta[path] = &h
	}
	c.view.mu.Unlock()
}

func (c *Client) noteDeleted(path string) {
	c.view.mu.Lock()
	if c.view.tracking {
		c.view.delta[path] = nil
	}
	c.view.mu.Unlock()
}

// deleteRecord removes a record object and notes it for the next root; damaged as
// removeRecord's.
func (c *Client) deleteRecord(ctx context.Context, dir, name string) (damaged bool, err error) {
	damaged, err = c.removeRecord(ctx, dir, name)
	if err == nil || errors.Is(err, storage.ErrNotFound) {
		c.noteDeleted(storage.Join(dir, name))
	}
	return damaged, err
}

// beginChanges starts a command that changes the namespace (under its lock): it loads the
// root and tracks the records the command writes and deletes. A namespace without a root
// (written by an older veil) gets one built from its records as they are now.
func (c *Client) beginChanges(ctx context.Context) error { return c.beginChangesFrom(ctx, true) }

// beginChangesFrom is beginChanges; probe as fetchRoot's. The command writes again every
// name object it writes under (forgetStoredNames).
func (c *Client) beginChangesFrom(ctx context.Context, probe bool) error {
	c.keys.long.forgetStoredNames()
	if err := c.refreshFrom(ctx, probe); err != nil {
		return err
	}
	c.view.mu.Lock()
	root := c.view.root
	c.view.mu.Unlock()
	if root == nil {
		entries, err := c.scanRecords(ctx)
		if err != nil {
			return fmt.Errorf("build the first tree root: %w", err)
		}
		root = &treeRoot{Entries: entries} // number 0: published as 1
	}
	c.view.mu.Lock()
	c.view.root, c.view.delta, c.view.tracking, c.view.expect = root, map[string]*[32]byte{}, true, nil
	c.view.mu.Unlock()
	return nil
}

// scanRecords hashes every record of this key in the namespace.
func (c *Client) scanRecords(ctx context.Context) (map[string][32]byte, error) {
	out := map[string][32]byte{}
	err := c.walk(ctx, "", false, func(_ string, _ bool, encDir, objName string) error {
		rc, err := c.be.Get(ctx, encDir, objName)
		if errors.Is(err, storage.ErrNotFound) {
			return nil // a directory without metadata
		}
		if err != nil {
			return err
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxRecordBytes))
		rc.Close()
		if err != nil {
			return err
		}
		path := storage.Join(encDir, objName)
		if _, err := c.keys.openRecord(b, path); err != nil {
			return fmt.Errorf("%s: %w", c.describe(path), err)
		}
		out[path] = sha256.Sum256(b)
		return nil
	})
	return out, err
}

// publishChanges ends a command that changed the namespace: it writes the next root (the
// newest root with this command's changes applied) as .veil/roots/<number>. A concurrent
// command that published first makes the create fail; then the changes are applied to its
// root instead, on the base an earlier attempt wrote while it still fits (reuseBase). It
// stops tracking whatever happens.
func (c *Client) publishChanges(ctx context.Context) error {
	c.view.mu.Lock()
	base, delta, tracking := c.view.root, c.view.delta, c.view.tracking
	c.view.tracking, c.view.delta, c.view.read, c.view.expect = false, nil, nil, nil
	c.view.mu.Unlock()
	if !tracking || len(delta) == 0 && base.Seq > 0 {
		return nil
	}
	orig := base
	var written *rootBase // the new base stored for a root that lost its number
	for attempt := 0; attempt < 16; attempt++ {
		if attempt > 0 {
			latest, err := c.latestRoot(ctx)
			if err != nil {
				return err
			}
			if latest != nil {
				base = latest
				if delta, err = c.resolveConflicts(ctx, orig, base, delta); err != nil {
					return err
				}
				orig = base
			}
		}
		next := nextRoot(base, delta)
		reused := next.reuseBase(written) // stored already: not again
		sealed := c.keys.sealRoot(next)
		if !reused {
			if err := c.storeBase(ctx, next); err != nil {
				return err
			}
		}
		if b := next.base; b != nil && b.sealed != nil {
			written = b
		}
		err := c.createRoot(ctx, next.Seq, sealed)
		if errors.Is(err, storage.ErrExists) {
			continue // another command published this number first
		}
		if err != nil {
			return err
		}
		c.basePublished(next)
		if err := c.mem.Save(next.Seq, next.sum); err != nil {
			return fmt.Errorf("remember tree root: %w", err)
		}
		c.view.mu.Lock()
		c.view.root = next
		c.view.mu.Unlock()
		// Every root stays: it is a snapshot, until 'veil forget' drops it (snapshots.go).
		return nil
	}
	return errors.New("publish tree root: too many concurrent commands; run this one again")
}

// resolveConflicts takes the changes of a command that started on root orig to the newer
// root latest that another command published meanwhile. A path both changed was written
// by both (records live at their paths): the object stored there now is the later write.
// If it is this command's record the root lists it; otherwise the root keeps what latest
// lists (authenticated by that root), never a hash the service alone vouches for: a
// service replaying an older record there must not get it listed (found by review). Found
// by review too: without this, two puts of one file, the first to publish listing its
// record after the second had overwritten it, left the newest root listing a record that
// no longer existed (the file unreadable). One GET per conflicting path, none otherwise.
func (c *Client) resolveConflicts(ctx context.Context, orig, latest *treeRoot, delta map[string]*[32]byte) (map[string]*[32]byte, error) {
	var out map[string]*[32]byte
	for p, mine := range delta {
		was, wasOK := orig.Entries[p]
		now, nowOK := latest.Entries[p]
		if wasOK == nowOK && was == now {
			continue // nobody else changed p
		}
		if out == nil {
			out = maps.Clone(delta)
		}
		if mine != nil {
			dir, name := storage.Split(p)
			b, err := c.getObjectNow(ctx, dir, name)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return nil, fmt.Errorf("publish tree root: %s, changed by another command too: %w", c.describe(p), err)
			}
			if err == nil && sha256.Sum256(b) == *mine {
				continue // this command's record is the one stored
			}
		}
		if nowOK {
			out[p] = &now
		} else {
			out[p] = nil
		}
	}
	if out == nil {
		return delta, nil
	}
	return out, nil
}

// createRoot stores a sealed root as .veil/roots/<seq> only if that number is still free
// (storage.ErrExists if another command took it: a compare-and-swap on the newest root).
// A backend with conditional batches (storage.CreateBatcher: the storage service, a local
// directory) does it in one request and one commit; one that creates a single object
// atomically (storage.Creator: S3 on a server that honours If-None-Match) in one PUT; any
// other backend, a service older than batch version 2, or an S3 server without
// conditional PUTs, by writing a temporary object and moving it to its number (Move
// refuses an existing destination: atomic on a directory, a check then a copy on S3).
func (c *Client) createRoot(ctx context.Context, seq uint64, b []byte) error {
	if cb, ok := c.be.(storage.CreateBatcher); ok && len(b) <= c.rootBatchMax() && !c.noCondBatch.Load() {
		err := cb.PutBatch(ctx, []storage.Object{{Dir: rootsDir, Name: rootName(seq), Data: b, Create: true}})
		if err == nil || errors.Is(err, storage.ErrExists) {
			return err
		}
		// An older service refuses the batch (nothing stored); after a lost answer it may
		// have been stored: then the move below finds the number taken and the caller
		// publishes the same changes once more, as the next number.
		if !c.largeRefused(err, b) {
			c.noCondBatch.Store(true)
		}
		c.log.Debug("conditional batch refused; publishing the root by move", "err", err)
	}
	if cr, ok := c.be.(storage.Creator); ok {
		err := retry(ctx, func() error { return cr.PutNew(ctx, rootsDir, rootName(seq), bytesReader(b), int64(len(b))) })
		if err == nil || errors.Is(err, storage.ErrExists) {
			// After a lost answer the first try may have stored it: the caller then finds
			// the number taken and publishes the same changes once more, as the next one.
			return err
		}
		if !errors.Is(err, storage.ErrNoConditions) {
			return fmt.Errorf("publish tree root: %w", err)
		}
		c.log.Debug("the storage creates no object atomically; publishing the root by move", "err", err)
	}
	var id [8]byte
	rand.Read(id[:])
	tmp := "tmp-" + hex.EncodeToString(id[:])
	if err := retry(ctx, func() error { return c.be.Put(ctx, rootsDir, tmp, bytesReader(b), int64(len(b))) }); err != nil {
		return fmt.Errorf("write tree root: %w", err)
	}
	err := c.be.Move(ctx, rootsDir, tmp, rootsDir, rootName(seq))
	if err != nil {
		c.be.Delete(ctx, rootsDir, tmp)
	}
	if err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("publish tree root: %w", err)
	}
	return err
}

// pruneRootTemps deletes temporary roots older than cutoff: left by a command that died
// between writing its root and moving it to its number, or by one that died while its S3
// backend probed the server's creates there (storage.Creator: tmp-probe-<hex>).
func (c *Client) pruneRootTemps(ctx context.Context, cutoff time.Time, dryRun bool) {
	infos, err := c.be.List(ctx, rootsDir)
	if err != nil {
		return
	}
	for _, i := range infos {
		if strings.HasPrefix(i.Name, "tmp-") && !i.ModTime.IsZero() && i.ModTime.Before(cutoff) && !dryRun {
			c.be.Delete(ctx, rootsDir, i.Name)
		}
	}
}
