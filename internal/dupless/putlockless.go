package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// A put without the lock (docs/design.md, "A put without the lock"). A 'veil put' of one
// small file to the storage service takes no lock: its chunks, its record, the create of
// its next tree root and the condition that .veil/pruning does not exist go in ONE batch
// (store API batch version 3), which commits whole or not at all. 'veil prune' writes
// .veil/pruning (under its exclusive lock, before it reads anything) and deletes it when
// it is done, so a lock-free put commits either before prune plans (prune sees its record)
// or after prune has finished (its chunks are in its own batch, and the chunks it reuses
// without sending belong to a record that prune saw), never in between. Whenever that one
// batch cannot be sent or is refused (prune running, another command published the next
// root first, a root too large for a batch, a service older than batch version 3), the
// put starts again under the lock, from the beginning: nothing is reused from the refused
// attempt, since the chunks it planned to reuse may be gone by then.

// pruneMark is the object 'veil prune' holds while it may delete chunks (.veil/pruning).
const pruneMark = "pruning"

// errNeedLock says a lock-free put could not commit in its one batch: Put runs it again
// under the lock.
var errNeedLock = errors.New("the put needs the lock")

// locklessRootRoom is what the next root of a lock-free put (one entry more) may add to
// the newest root's size: it must fit a batch (rootBatchMax).
const locklessRootRoom = 4 << 10

// locklessCandidate reports whether a put of locals may go without the lock: one regular
// file small enough to fold, to a service that takes absent conditions.
func (c *Client) locklessCandidate(locals []string) bool {
	if len(locals) != 1 || c.putThen != nil || c.pinned() || c.batch == nil || c.batch.disabled() ||
		c.noAbsent.Load() || c.noCondBatch.Load() {
		return false
	}
	if _, ok := c.be.(storage.AbsentBatcher); !ok {
		return false
	}
	fi, err := os.Lstat(locals[0])
	return err == nil && fi.Mode().IsRegular() && fi.Size() <= foldMaxFile
}

// deriveLoneEarly reads the one small file of a lone put (one chunk: foldMaxFile is under
// MinChunk) and asks the key server for its chunk's key at once, so that the request, and
// the key server connection of a new command, overlap the tree root lookup and the name
// lookups instead of following them. The put takes the answer if it needs the key of the
// same content (keySource.derive); if it finds the file unchanged, the answer is dropped:
// one key request that a put of an unchanged lone file did not make before.
func (c *Client) deriveLoneEarly(ctx context.Context, local string) {
	f, fi, err := openNoFollow(local)
	if err != nil {
		return // put reports it
	}
	defer f.Close()
	if !fi.Mode().IsRegular() {
		return
	}
	data, err := io.ReadAll(io.LimitReader(f, foldMaxFile+1))
	if err != nil || len(data) == 0 || len(data) > foldMaxFile {
		return
	}
	p := preparePiece(c.mleFor, data, !c.opts.NoCompress)
	c.ks.deriveEarly(ctx, p.digest)
}

// loneFromRoot answers what a lone put of local to dest would otherwise look up on the
// service (is its name a stored directory? a stored file's record? is a folder of dest a
// file?) from the tree root it builds on, root n, which lists every record path: no
// request. The lock-free batch then requires what the answers assumed: no file record at
// any folder of dest and, unless root n lists one, no directory of its name (absent
// conditions), and its record created only if root n does not list it (a create). So an
// object no root lists (a crashed command's, say) makes the batch refused (409 exists),
// and the put starts again under the lock, where it looks the names up on the service as
// before. The answers go into d; conds are the conditions, for run.conds. ok is false
// when root n lists a folder of dest as a file: put reports it (noFileOnPath).
func (c *Client) loneFromRoot(local, dest string, d *dirCache) (conds []storage.Object, ok bool) {
	c.view.mu.Lock()
	root := c.view.root
	c.view.mu.Unlock()
	encDir, encName, err := c.encFile(joinPath(dest, filepath.Base(filepath.Clean(local))))
	if err != nil || root == nil {
		return nil, false
	}
	folders, err := c.folderRecords(dest)
	if err != nil {
		return nil, false
	}
	for _, f := range folders {
		if _, listed := root.Entries[storage.Join(f.encDir, f.objName)]; listed {
			return nil, false
		}
		conds = append(conds, storage.Object{Dir: f.encDir, Name: f.objName, Absent: true})
	}
	record := storage.Join(encDir, encName+keySuffix)
	_, listed := root.Entries[record]
	c.startRootDraft(root, record)
	inside := storage.Join(encDir, encName) + "/"
	isDir := false
	for p := range root.Entries {
		if strings.HasPrefix(p, inside) {
			isDir = true
			break
		}
	}
	if !isDir {
		conds = append(conds, storage.Object{Dir: encDir, Name: encName, Absent: true})
	}
	d.mu.Lock()
	d.m[encDir] = &dirEntries{known: map[string]bool{encName: isDir, encName + keySuffix: listed}}
	d.mu.Unlock()
	return conds, true
}

// beginLockless starts a lock-free put: the newest root (which proves the namespace is
// this key's, refresh) and tracking of the command's changes, as lock does, without the
// lock. A namespace whose ownership is not proven that way nor by its key check (a new
// one: its key check is still to be written) goes under the lock. The returned function
// ends it.
func (c *Client) beginLockless(ctx context.Context) (func() error, error) {
	c.changing.Lock()
	end := func() (err error) {
		if c.memSaved != nil {
			if e := <-c.memSaved; e != nil {
				err = fmt.Errorf("remember tree root: %w", e)
			}
			c.memSaved = nil
		}
		c.view.mu.Lock()
		c.view.tracking, c.view.delta, c.view.read, c.view.expect = false, nil, nil, nil
		c.view.mu.Unlock()
		c.changing.Unlock()
		return err
	}
	c.loneRead = time.Now()
	if err := c.beginChangesFrom(ctx, false); err != nil { // root n only: the batch requires n+1 free
		end()
		return nil, err
	}
	c.view.mu.Lock()
	big := c.view.root.size > c.rootBatchMax()-locklessRootRoom
	c.view.mu.Unlock()
	if big || !c.keyChecked.Load() {
		end()
		return nil, errNeedLock
	}
	return end, nil
}

// commitLockless writes a lock-free put's record: its held chunks, the name objects of its
// long names, the condition that no prune runs, the record and the next root, in one
// batch. Anything else is errNeedLock, and the held chunks are dropped (the put under the
// lock sends them again).
func (c *Client) commitLockless(ctx context.Context, run *putRun, encDir, objName string, rec *record, held []heldUpload) (int64, error) {
	path := storage.Join(encDir, objName)
	b := c.keys.sealRecord(rec, path)
	var fr *foldedRoot
	if !run.needLock.Load() { // every chunk it sends is held (run.store)
		fr = c.nextRootWith(path, b)
	}
	if fr == nil {
		run.dropHeld(held, errNeedLock)
		return 0, errNeedLock
	}
	names, err := c.keys.nameObjects(path) // in the batch, whatever a prune deleted (prunenames.go)
	if err != nil {
		run.dropHeld(held, err)
		return 0, err
	}
	if err := c.keepBeforeWrite(ctx, path); err != nil {
		run.dropHeld(held, err)
		return 0, err
	}
	c.view.mu.Lock()
	listed, had := c.view.root.Entries[path] // not listed: created, or the batch is refused
	c.view.mu.Unlock()
	if c.loneTooOld() {
		run.dropHeld(held, errNeedLock)
		return 0, errNeedLock
	}
	recObj := storage.Object{Dir: encDir, Name: objName, Data: b, Create: !had}
	if _, ok := c.be.(storage.MatchBatcher); ok && had && !c.noMatch.Load() {
		recObj.Match = &listed // replaced only if it is what root n lists (recordcas.go)
	}
	// No move mark either: a put under the lock lists them and refuses a name a pending
	// mv covers (movemark.go); .veil/moves goes once its last mark does.
	movesDirName, movesName := storage.Split(movesDir)
	movesAbsent := storage.Object{Dir: movesDirName, Name: movesName, Absent: true}
	batch := func() error {
		objs := append(append(heldObjects(held), names...), storage.Object{Dir: veilDir, Name: pruneMark, Absent: true},
			movesAbsent, recObj, fr.obj)
		return storage.PutAll(ctx, c.be, append(objs, run.conds...))
	}
	err = batch()
	if err != nil && recObj.Match != nil && c.noMatchService(err, recObj) {
		// A service older than match conditions refused the batch whole (nothing stored,
		// nothing learned about other commands): the same batch without the match, as
		// before batch version 4, rather than the lock in every such command.
		recObj.Match = nil
		err = batch()
	}
	if err != nil {
		run.dropHeld(held, errNeedLock)
		switch {
		case c.noMatchService(err, recObj): // the put under the lock writes it unconditionally
		case !errors.Is(err, storage.ErrExists) && !errors.Is(err, storage.ErrChanged) && !c.largeRefused(err, fr.obj.Data): // e.g. a service older than batch version 3
			c.noAbsent.Store(true)
		}
		if errors.Is(err, storage.ErrExists) { // the next root, or a prune's (maybe abandoned) mark
			c.markSeen.Store(true)
		}
		c.log.Debug("lock-free put refused; putting under the lock", "err", err)
		return 0, fmt.Errorf("%w: %w", errNeedLock, err)
	}
	run.finishHeld(held, true)
	c.basePublished(fr.root)
	c.log.Debug("put without the lock: one batch", "root", fr.root.Seq, "created", !had, "drafted", fr.drafted)
	// The device remembers the root in the background (one slot and its fdatasync,
	// rootmem.go); the command's end waits for it and reports a failure.
	c.view.mu.Lock()
	c.view.root, c.view.delta = fr.root, map[string]*[32]byte{}
	c.view.mu.Unlock()
	saved := make(chan error, 1)
	c.memSaved = saved
	go func() { saved <- c.mem.Save(fr.root.Seq, fr.root.sum) }()
	return int64(len(b)), nil
}

// locklessMaxAge bounds the time from a lock-free put's read of root n to its batch (or
// its check of n+1): a forget keeps every number it frees marked for markGrace, far longer
// (forgetmarks.go), so that n+1 free still means n was the newest.
const locklessMaxAge = 10 * time.Minute

// loneTooOld reports whether the lock-free put read its root too long ago to go on, by the
// monotonic clock or the wall clock: the monotonic one stops while the machine sleeps (a
// put suspended for a day would pass it; found by review), the wall one may be set back.
func (c *Client) loneTooOld() bool {
	now := time.Now()
	return now.Sub(c.loneRead) > locklessMaxAge || now.Round(0).Sub(c.loneRead.Round(0)) > locklessMaxAge
}

// unbatchedStillNewest ends a lock-free put that sent no batch (its file found unchanged
// against root n): it read only root n, and without a batch nothing has checked that n is
// still the newest. If another command published n+1 (or forget marked it), the put goes
// under the lock, which probes: another device may have replaced or removed the file.
func (c *Client) unbatchedStillNewest(ctx context.Context) error {
	c.view.mu.Lock()
	root, published := c.view.root, c.memSaved != nil
	c.view.mu.Unlock()
	if published || root == nil {
		return nil // its batch committed root n+1: n was the newest
	}
	if c.loneTooOld() {
		return errNeedLock
	}
	_, err := c.fetchRootSeq(ctx, root.Seq+1)
	switch {
	case errors.Is(err, errRootMark) || err == nil:
		return errNeedLock
	case errors.Is(err, storage.ErrNotFound):
		return nil
	}
	return err
}

// dropHeld ends held uploads that will not be sent: the files waiting for them see err.
func (r *putRun) dropHeld(held []heldUpload, err error) {
	for _, h := range held {
		h.u.err = err
		r.bytes.Release(h.n)
		close(h.u.done)
	}
}

// markPruning writes .veil/pruning for a prune that will delete (on a service with absent
// conditions, where puts may go without the lock), then reads the newest root again: a
// lock-free put that committed before the mark is in it. The returned function deletes
// the mark.
func (c *Client) markPruning(ctx context.Context) (func(), error) {
	if _, ok := c.be.(storage.AbsentBatcher); !ok {
		return func() {}, nil
	}
	if err := retry(ctx, func() error { return c.be.Put(ctx, veilDir, pruneMark, bytesReader(nil), 0) }); err != nil {
		return nil, fmt.Errorf("write %s/%s: %w", veilDir, pruneMark, err)
	}
	unmark := func() { c.be.Delete(context.WithoutCancel(ctx), veilDir, pruneMark) }
	if err := c.refresh(ctx); err != nil {
		unmark()
		return nil, err
	}
	return unmark, nil
}

// clearAbandonedMark deletes .veil/pruning when the command that wrote it ended without
// deleting it (a crashed prune, rm, mv or sync, which delete it before releasing their
// lock): until then every lock-free put went under the lock. The caller holds the shared
// lock, which none of the commands that write the mark shares, so no live one writes it
// meanwhile; and the mark must be older than a lock-free put may run plus a lock's
// staleness, by the storage's clock: every lock-free put that read its root before the
// mark's command began has gone under the lock by then (loneTooOld), and that command's
// lock is abandoned. One Stat, made only by a put whose lock-free batch was refused.
func (c *Client) clearAbandonedMark(ctx context.Context) {
	i, err := c.be.Stat(ctx, veilDir, pruneMark)
	if err != nil || i.ModTime.IsZero() || c.storageNow().Sub(i.ModTime) <= locklessMaxAge+lockStale {
		return
	}
	if err := c.be.Delete(ctx, veilDir, pruneMark); err == nil {
		c.log.Warn("removed an abandoned prune mark (a prune, rm, mv or sync ended without removing it); small puts go without the lock again",
			"mark", storage.Join(veilDir, pruneMark), "written", i.ModTime.Format(time.DateTime))
	}
}
