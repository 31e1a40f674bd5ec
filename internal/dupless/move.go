package dupless

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/words"
)

// Move (veil mv) and its resumption. A folder's mv writes a move mark first
// (.veil/moves/<name>, docs/formats/key-record.md, "Move marks") and deletes it when it is
// done: run again after an interruption, the same mv finds the mark and moves what is left
// of the source into the destination, instead of refusing the destination as existing
// (found by a user walkthrough). ResumeMove (mv --resume) does the same without a mark.

const movesDir = ".veil/moves"

// settledDir holds the marks of mvs whose last run ended with an error it reported
// (settled: they refuse nothing), apart from the running ones: a lock-free put requires
// .veil/moves absent, and a settled mark there sent every lone put under the lock until
// a command dropped it (found by review: 23 requests per put instead of 11-12).
const settledDir = ".veil/moves-settled"

// moveMark is the name of the mark of a folder mv from encSrc to encDst (encrypted paths).
func moveMark(encSrc, encDst string) string {
	h := sha256.Sum256([]byte("veil/v1 move\x00" + encSrc + "\x00" + encDst))
	return hex.EncodeToString(h[:])
}

// Move renames a file, symlink or directory. Key records are bound to their encrypted
// path, so each record below src is re-sealed for its new path and written before the old
// one is deleted: interrupted, every file stays readable under one of the two names, and
// the same Move run again finishes it. Content is never re-sent.
func (c *Client) Move(ctx context.Context, src, dst string) error {
	return c.move(ctx, src, dst, false)
}

// ResumeMove finishes a Move from src to dst that was interrupted, as Move run again
// does, also when dst holds no move mark (an mv of an older veil, or a mark lost): it moves
// what is left of src into the folder dst. A file dst already holds in another version
// stays in src, reported, as does an entry dst holds as the other kind (a file where src
// has a folder, or the reverse); nothing is overwritten. dst may not hold src. With src gone it only makes sure the
// tree root lists what the interrupted mv moved.
func (c *Client) ResumeMove(ctx context.Context, src, dst string) error {
	return c.move(ctx, src, dst, true)
}

func (c *Client) move(ctx context.Context, src, dst string, resume bool) (err error) {
	src, dst = cleanPath(src), cleanPath(dst)
	if src == "" || dst == "" {
		return errors.New("cannot move the root or onto it")
	}
	if dst == src || len(dst) > len(src) && dst[:len(src)+1] == src+"/" {
		return fmt.Errorf("cannot move %s into itself", src)
	}
	if strings.HasPrefix(src, dst+"/") { // no mv of veil's left it: a resume would flatten src into it
		return fmt.Errorf("cannot move %s into %s, which holds it", src, dst)
	}
	unlock, err := c.lockRemoving(ctx)
	if err != nil {
		return err
	}
	defer unlockInto(&err, unlock)
	encSrc, err := c.keys.encPath(src)
	if err != nil {
		return err
	}
	encDst, err := c.keys.encPath(dst)
	if err != nil {
		return err
	}
	if err := c.refusePending(ctx, src, dst, src, dst); err != nil {
		return err
	}
	mark := moveMark(encSrc, encDst)
	own, marked, err := c.hasMark(ctx, mark)
	if err != nil {
		return err
	}
	ran := false // this run wrote or used the mark: settled if it fails
	defer func() {
		switch {
		case err != nil && ran:
			c.settle(ctx, src, dst, mark)
		case err == nil && marked && own.dir == settledDir:
			// A settled mv's run finished: its running mark is gone; the settled copy
			// goes too (a copy left by a failure here is of a finished mv, and refuses
			// nothing).
			c.dropMarkIn(context.WithoutCancel(ctx), settledDir, mark)
		}
	}()
	srcKind, srcErr := c.kindOf(ctx, src)
	if srcErr != nil && !errors.Is(srcErr, storage.ErrNotFound) {
		return srcErr
	}
	dstKind, err := c.kindOf(ctx, dst)
	if errors.Is(err, storage.ErrNotFound) {
		if srcErr != nil {
			if marked { // the mv left nothing to do: another veil's removed its source
				if err := c.dropMarkIn(ctx, own.dir, mark); err != nil {
					return fmt.Errorf("delete the move mark: %w", err)
				}
				return &nothingLeftError{src: src, dst: dst, err: srcErr}
			}
			return srcErr
		}
		ran = srcKind == typeDir
		return c.moveNew(ctx, src, dst, srcKind, encSrc, encDst, mark)
	}
	if err != nil {
		return err
	}
	exists := fmt.Errorf("%s: %w", dst, storage.ErrExists)
	if dstKind != typeDir { // a file's mv cut off between its two steps: finish it
		if srcKind == typeDir {
			return exists
		}
		done, err := c.finishFile(ctx, src, dst, srcErr == nil)
		switch {
		case err != nil:
			return err
		case done:
			return nil
		}
		// Another file, or src's older version (another device stored src anew since): a
		// killed mv's record at dst stays, listed (listUnlisted).
		if err := c.listUnlisted(ctx, dst); err != nil {
			return err
		}
		if srcErr != nil {
			return srcErr
		}
		return exists
	}
	if srcErr == nil && srcKind != typeDir {
		return exists
	}
	switch {
	case marked || resume:
		if !marked || own.Settled { // running: a --resume or rerun killed in turn is pending too
			if err := c.writeMark(ctx, src, dst, mark, false); err != nil {
				return err
			}
		}
		ran = true
		return c.moveTree(ctx, src, dst, encSrc, encDst, mark, true, srcErr == nil)
	case srcErr != nil:
		return srcErr
	}
	return fmt.Errorf("%w; if an interrupted 'veil mv' left it, 'veil mv --resume %s %s' moves what is left of %s into it",
		exists, shellWord(src), shellWord(dst), src)
}

// moveNew moves src to dst, which does not exist.
func (c *Client) moveNew(ctx context.Context, src, dst string, kind int, encSrc, encDst, mark string) error {
	if parent, _ := storage.Split(dst); parent != "" {
		if err := c.noFileOnPath(ctx, parent); err != nil {
			return err
		}
	}
	if kind != typeDir {
		if err := c.recordFolders(ctx, dst, false); err != nil {
			return err
		}
		return c.moveRecord(ctx, src, dst)
	}
	if err := c.writeMark(ctx, src, dst, mark, false); err != nil {
		return err
	}
	if err := c.mkdir(ctx, dst); err != nil {
		return err
	}
	return c.moveTree(ctx, src, dst, encSrc, encDst, mark, false, true)
}

// hasMark returns the move mark name, if it is stored and is this key's (of this veil's or
// of an older one, which names no folders), among the marks the command read.
func (c *Client) hasMark(ctx context.Context, name string) (PendingMove, bool, error) {
	marks, err := c.pending(ctx)
	for _, m := range marks {
		if m.name == name {
			return m, true, err
		}
	}
	return PendingMove{}, false, err
}

// moveTree moves everything below the folder src into the folder dst, then removes src's
// emptied folders and the move mark. resuming, dst may hold part of it already: a file
// there with the same record as src's is the file moved (src's copy is deleted), one with
// another record stays where it is and src's copy is kept and reported; and the records a
// killed mv moved before it could publish its root are listed (adoptMoved). srcExists is
// false when src is gone already.
func (c *Client) moveTree(ctx context.Context, src, dst, encSrc, encDst, mark string, resuming, srcExists bool) error {
	var files, dirs []string
	var kept []string // what dst holds in another version or kind: left in src
	seen := map[string]bool{}
	if srcExists {
		err := c.walk(ctx, src, true, func(rel string, isDir bool, encDir, objName string) error {
			seen[storage.Join(encDir, objName)] = true
			if below(rel, kept) {
				return nil
			}
			if isDir {
				if resuming {
					if k, err := c.kindOf(ctx, joinPath(dst, rel)); err == nil && k != typeDir {
						kept = append(kept, rel) // a folder where dst holds a file: not below it
						return nil
					} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
						return err
					}
				}
				dirs = append(dirs, rel)
				return c.copyDirMeta(ctx, joinPath(src, rel), joinPath(dst, rel))
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			return err
		}
	}
	if resuming {
		back, err := c.adoptMoved(ctx, src, encSrc, encDst, seen)
		if err != nil {
			return err
		}
		kept = append(kept, back...)
	}
	if c.opts.Events.Total != nil {
		c.opts.Events.Total(len(files), 0)
	}
	var mu sync.Mutex
	err := c.parallel(ctx, len(files), func(ctx context.Context, i int) error {
		from, to := joinPath(src, files[i]), joinPath(dst, files[i])
		if resuming {
			switch found, same, err := c.movedAlready(ctx, from, to); {
			case err != nil:
				return err
			case same:
				sd, sn, _ := c.encFile(from)
				if _, err := c.deleteRecord(ctx, sd, sn+keySuffix); err != nil && !errors.Is(err, storage.ErrNotFound) {
					return err
				}
				c.event(to, nil)
				return nil
			case found:
				if err := c.listUnlisted(ctx, to); err != nil {
					return err
				}
				mu.Lock()
				kept = append(kept, files[i])
				mu.Unlock()
				return nil
			}
			if k, err := c.kindOf(ctx, to); err == nil && k == typeDir { // a file where dst holds a folder
				mu.Lock()
				kept = append(kept, files[i])
				mu.Unlock()
				return nil
			} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return err
			}
		}
		if err := c.moveRecord(ctx, from, to); err != nil {
			return err
		}
		c.event(to, nil) // progress of a long mv
		return nil
	})
	if err != nil {
		return err
	}
	if srcExists {
		if err := c.copyDirMeta(ctx, src, dst); err != nil {
			return err
		}
		if err := c.removeMoved(ctx, src, dirs, len(kept) > 0); err != nil {
			return err
		}
	}
	if len(kept) > 0 {
		return fmt.Errorf("moved what was left of %s into %s, except %s %s holds in another version or kind (first: %s), kept in %s: "+
			"remove or rename one of each pair, then run this mv again", src, dst, words.Count(len(kept), "file", "files"), dst, joinPath(src, minString(kept)), src)
	}
	// The root first: a mark deleted before it, a mv killed in between would leave what it
	// moved unlisted, with nothing to lead its rerun to it.
	if err := c.publishChanges(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	if err := c.dropMarkIn(ctx, movesDir, mark); err != nil { // running: written so before the run moved anything
		return fmt.Errorf("moved %s to %s; deleting the move mark: %w", src, dst, err)
	}
	return nil
}

// removeMoved removes src's emptied folders (dirs, relative to src, parents first, then src
// itself), deepest first, one by one: anything another client added meanwhile stays (the
// folder is then not empty, and we say so), as do files kept by a resumed mv (kept).
func (c *Client) removeMoved(ctx context.Context, src string, dirs []string, kept bool) error {
	for i := len(dirs) - 1; i >= -1; i-- {
		p := src
		if i >= 0 {
			p = joinPath(src, dirs[i])
		}
		enc, _ := c.keys.encPath(p)
		d, n := storage.Split(enc)
		if kept { // a folder holding a kept file keeps its record too
			if infos, err := c.be.List(ctx, enc); err == nil && hasRecords(infos) {
				continue
			}
		}
		if _, err := c.deleteRecord(ctx, enc, dirMetaName); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		if err := c.be.Delete(ctx, d, n); errors.Is(err, storage.ErrNotEmpty) {
			return fmt.Errorf("moved %s, but %s gained new entries meanwhile and was kept", src, p)
		} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return nil
}

// hasRecords reports whether a folder listing holds anything but its own record.
func hasRecords(infos []storage.Info) bool {
	for _, i := range infos {
		if i.Name != dirMetaName {
			return true
		}
	}
	return false
}

func (c *Client) moveRecord(ctx context.Context, src, dst string) error {
	sd, sn, err := c.encFile(src)
	if err != nil {
		return err
	}
	dd, dn, err := c.encFile(dst)
	if err != nil {
		return err
	}
	r, err := c.readRecord(ctx, sd, sn+keySuffix)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if _, err := c.writeRecord(ctx, dd, dn+keySuffix, r); err != nil {
		return err
	}
	// Once written, the old record goes even if the command is interrupted: a Ctrl-C
	// between the two steps would publish both, as two files (finishFile).
	_, err = c.deleteRecord(context.WithoutCancel(ctx), sd, sn+keySuffix)
	return err
}

func (c *Client) copyDirMeta(ctx context.Context, src, dst string) error {
	se, _ := c.keys.encPath(src)
	de, err := c.keys.encPath(dst)
	if err != nil {
		return err
	}
	if err := c.storeLongNames(ctx, de); err != nil {
		return err
	}
	if err := c.be.Create(ctx, de); err != nil {
		return err
	}
	// Once created, the folder gets its record even if the command is interrupted, as a
	// file's record goes with its move (moveRecord): a Ctrl-C in between published it
	// without one (d????????? in ls -l, restored 0700), found by a user walkthrough.
	ctx = context.WithoutCancel(ctx)
	r, err := c.readRecord(ctx, se, dirMetaName)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = c.writeRecord(ctx, de, dirMetaName, r)
	return err
}

// below reports whether the relative path rel is one of dirs or below one.
func below(rel string, dirs []string) bool {
	for _, d := range dirs {
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// minString returns the least of ss (not empty).
func minString(ss []string) string {
	m := ss[0]
	for _, s := range ss[1:] {
		m = min(m, s)
	}
	return m
}

// shellWord quotes a path for a command line shown to the user, when it needs it: $'...'
// (words.Name) when it holds a control character or bytes that are not UTF-8, which
// '...' would carry raw (escaped in place by the CLI's error line, it no longer pasted as
// the name: found by review).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@%") == "" {
		return s
	}
	if words.Escape(s) != s {
		return words.Name(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
