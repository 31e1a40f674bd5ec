package dupless

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// filePut is one file being stored: what its batches (putBatch) share. It is used by one
// worker goroutine; only its commit runs on (after the worker let go of it).
type filePut struct {
	c               *Client
	ctx             context.Context
	run             *putRun
	sum             *Summary
	t               putTask
	encDir, encName string
	f               *os.File    // nil until opened
	fi              os.FileInfo // of the open file
	release         func()      // the large-transfer slot

	prev     map[mle.Digest]chunkRef // the previous version's chunks: reused whole
	mine     map[mle.Digest]pending  // chunks of this file so far, fallbacks included
	rec      *record                 // the key record being built
	waits    []*upload               // uploads this file's record must not precede
	kept     int                     // chunks reused rather than sent (counted if it commits)
	sent     int                     // chunks this file sent, new to the run (counted if it commits)
	owned    []*keyFuture            // keys this file derives for the whole run
	fallback error                   // why some chunks have random keys (nil: none do)
	suspect  bool                    // the put cache knew this file, but its ctime or inode changed or its entry is racy: read it
	old      *record                 // the stored record, when it matched by size, mtime and mode (then read to compare)
	readAt   time.Time               // putClock just before the file was opened (fi) and read: is its entry racy?
}

// putFile chunks, compresses, derives keys for, encrypts and uploads one file, then writes
// its key record: the record is the commit point, so a crash never leaves a record that
// points to missing content, and overwriting a file is atomic. The file's outcome is
// reported through c.done: at once when it fails or is unchanged, else by its commit, which
// the run finishes while this worker goes on with the next file.
func (c *Client) putFile(ctx context.Context, t putTask, sum *Summary, run *putRun) {
	fp, err := c.startFile(ctx, t, sum, run)
	if err != nil || fp == nil {
		c.done(sum, t.local, err)
		return
	}
	err = fp.storeChunks()
	if err == nil {
		fp.noteChanged()
		fp.commit()
	} else {
		run.releaseHeld() // no record will take them
	}
	fp.close() // before a failure is reported: the file's uploads are over by then
	if err != nil {
		c.done(sum, t.local, err)
	}
}

// startFile opens a file to store, or returns nil when its stored version is unchanged
// (counted in sum) or on error.
func (c *Client) startFile(ctx context.Context, t putTask, sum *Summary, run *putRun) (*filePut, error) {
	encDir, encName, err := run.encFile(c, t.dest)
	if err != nil {
		return nil, err
	}
	verdict, ce := run.cache.file(c, encDir, encName, t.info)
	if verdict == cacheSame {
		c.countUnchanged(sum, ce.Size, int(ce.Chunks))
		return nil, nil
	}
	if err := run.notADir(ctx, c.be, encDir, encName, t.dest); err != nil {
		return nil, err
	}
	release, err := c.transfer(ctx, t.info.Size())
	if err != nil {
		return nil, err
	}
	fp := &filePut{c: c, ctx: ctx, run: run, sum: sum, t: t, encDir: encDir, encName: encName,
		release: release, prev: map[mle.Digest]chunkRef{}, mine: map[mle.Digest]pending{}, suspect: verdict == cacheSuspect}
	fp.readAt = putClock()
	unchanged, err := false, fp.open()
	if err == nil {
		unchanged, err = fp.previous()
	}
	if err != nil || unchanged {
		fp.close()
		return nil, err
	}
	fp.rec = &record{Type: typeFile, Mode: unixMode(fp.fi.Mode()), MTime: fp.fi.ModTime().UnixNano()}
	return fp, nil
}

// open opens the file (openNoFollow) and insists it is still the regular file the walk
// saw: a path swapped for a symlink meanwhile is not read.
func (fp *filePut) open() (err error) {
	if fp.f, fp.fi, err = openNoFollow(fp.t.local); err != nil {
		return err
	}
	if !fp.fi.Mode().IsRegular() || !os.SameFile(fp.fi, fp.t.info) {
		return errors.New("replaced while being stored: not stored")
	}
	return nil
}

// noteChanged warns when the file changed while it was read (its size, mtime or ctime now
// differ from when it was opened), as tar and borg do: what was stored is what was read,
// possibly a mix of two versions, under the mtime of the open. The record's mtime then
// differs from the file's, so the next put reads and stores it again. Found by a user
// walkthrough: a log file written during the put was stored torn without a word.
func (fp *filePut) noteChanged() {
	now, err := fp.f.Stat()
	if err != nil {
		return
	}
	c0, _, _, ok0 := statIDs(fp.fi)
	c1, _, _, ok1 := statIDs(now)
	if now.Size() == fp.fi.Size() && now.ModTime().Equal(fp.fi.ModTime()) && (!ok0 || !ok1 || c0 == c1) {
		return
	}
	fp.c.log.Warn("file changed while it was read: stored as read, the next put stores it again", "path", fp.t.local)
	fp.sum.add(func(s *Summary) { s.ChangedWhileRead++ })
}

// openNoFollow opens a local file for reading without following a link or blocking on a
// FIFO, and describes what it opened.
func openNoFollow(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// previous reads the record of the file's stored version. When it already describes the
// local file (size, mtime, mode), the file is counted as unchanged and not read if there
// is no put cache; with one, it is read and compared (commit: no record is written if the
// content is the same), since the record cannot tell whether the put that wrote it read
// the file within a timestamp tick of a change (racy clean, putcache_run.go): an entry of
// the put cache (noted by that read or this one) says so, and a file without a usable
// entry (stored by a put of one file, which leaves the cache as it was; by another
// device; or the cache was lost) is read once. Otherwise its chunks are
// reused whole (no key request, no encryption, no upload), except fallback chunks while a
// key server is configured (retried there) and version 1 references, which do not name
// their chunk's suite and scheme (encrypted anew; the service dedups them).
func (fp *filePut) previous() (unchanged bool, err error) {
	c, objName := fp.c, fp.encName+keySuffix
	exists, err := fp.run.dirs.has(fp.ctx, c.be, fp.encDir, objName)
	if err != nil || !exists {
		return false, err
	}
	old, err := c.readRecord(fp.ctx, fp.encDir, objName)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			c.log.Warn("previous key record unreadable; storing anew", "path", fp.t.dest, "err", err)
		}
		return false, nil
	}
	if c.unchanged(old, fp.fi) {
		if !fp.suspect && fp.run.cache == nil { // size, mtime and mode decide, as rclone does
			c.countUnchanged(fp.sum, old.Size, len(old.Chunks))
			return true, nil
		}
		fp.old = old // read it: if its content is the same too, the record stays (commit)
	}
	if c.opts.Force {
		return false, nil // every chunk sent again: --force repairs a chunk damaged on the service
	}
	for _, ch := range old.Chunks {
		if (ch.Flags&flagRandomKey == 0 || c.ks.kd == nil) && ch.Scheme != 0 {
			fp.prev[ch.Digest] = ch
		}
	}
	return false, nil
}

// countUnchanged counts a file already stored as it is (not read).
func (c *Client) countUnchanged(sum *Summary, size uint64, chunks int) {
	sum.add(func(s *Summary) {
		s.Files++
		s.Unchanged++
		s.Bytes += int64(size)
		s.Chunks += chunks
		s.ChunksKept += chunks
	})
	c.putBytes(sum, int64(size))
}

// reusable returns a stored (or being stored) chunk with p's message: from the previous
// version, from this file so far, or from this run.
func (fp *filePut) reusable(p piece) (pending, bool) {
	if old, ok := fp.prev[p.digest]; ok && old.Flags&flagCompressed == p.flags&flagCompressed {
		return pending{old, nil}, true
	}
	if m, ok := fp.mine[p.digest]; ok && m.ref.Flags&flagCompressed == p.flags&flagCompressed {
		return m, true
	}
	return fp.run.lookup(p)
}

// commit hands the rest to the run: wait for this file's uploads, then write its record
// (the commit point) and report the file. The worker goes on with the next file meanwhile.
func (fp *filePut) commit() {
	uploads := fp.waits
	fp.waits = nil // the commit waits for them, not close
	fp.run.commit(func() {
		c, path := fp.c, storage.Join(fp.encDir, fp.encName+keySuffix)
		var err error
		if fp.sameAsStored() { // read because the put cache doubted it, and found the same
			fp.run.releaseHeld()
			err = fp.run.awaitAll(fp.ctx, uploads)
			if err == nil {
				c.countUnchanged(fp.sum, fp.old.Size, len(fp.old.Chunks))
				fp.run.cache.noteRead(c, path, fp.old, fp.fi, fp.readAt)
			}
		} else {
			err = c.commitFile(fp.ctx, fp.run, fp.encDir, fp.encName, fp.rec, uploads, fp.fallback, fp.kept, fp.sent, fp.sum)
			if err == nil {
				fp.run.cache.noteRead(c, path, fp.rec, fp.fi, fp.readAt)
			}
		}
		if errors.Is(err, errNeedLock) { // a lock-free put refused: Put runs it again under the lock
			fp.run.needLock.Store(true)
			return
		}
		c.done(fp.sum, fp.t.local, err)
	})
}

// sameAsStored reports whether the record built from the file's content equals the stored
// one (which matched by size, mtime and mode): nothing to write.
func (fp *filePut) sameAsStored() bool {
	o, r := fp.old, fp.rec
	if o == nil || fp.fallback != nil || o.KeyID != fp.c.ks.keyID() || o.Type != r.Type || o.Mode != r.Mode ||
		o.MTime != r.MTime || o.Size != r.Size || len(o.Chunks) != len(r.Chunks) {
		return false
	}
	for i := range o.Chunks {
		if o.Chunks[i] != r.Chunks[i] {
			return false
		}
	}
	return true
}

// close ends the worker's part, on every path: no upload of this file outlives it (unless
// its commit waits for them), the chunks it owned but did not store let the waiting files
// go on, and the file and its transfer slot are released.
func (fp *filePut) close() {
	for _, u := range fp.waits {
		u.wait()
	}
	for _, f := range fp.owned {
		f.markStored()
	}
	if fp.f != nil {
		fp.f.Close()
	}
	fp.release()
}

// unchanged reports whether the stored record old already describes the local file fi:
// same size, modification time and mode, as rclone decides without reading the file
// (restic also compares ctime and inode; Options.Force reads every file). A file stored under random keys while the key
// server was away is stored again, so that it gets deduplicated.
func (c *Client) unchanged(old *record, fi os.FileInfo) bool {
	if c.opts.Force || old.Type != typeFile || old.Size != uint64(fi.Size()) ||
		old.MTime != fi.ModTime().UnixNano() || old.Mode != unixMode(fi.Mode()) {
		return false
	}
	for _, ch := range old.Chunks {
		if ch.Flags&flagRandomKey != 0 && c.ks.kd != nil {
			return false
		}
	}
	return true
}

// commitFile waits for a file's chunk uploads, then writes its key record. Its chunks are
// counted once it is stored: kept ones reused, sent ones it sent itself (so a run cut short
// counts no chunk of a file it did not store: chunks = sent + kept, as the summary says).
func (c *Client) commitFile(ctx context.Context, run *putRun, encDir, encName string, rec *record, uploads []*upload, fallback error, kept, sent int, sum *Summary) error {
	if fallback == nil {
		rec.KeyID = c.ks.keyID()
	}
	// A lone small file: its held chunks and its record in one atomic batch (putfold.go).
	held, folded := run.takeHeld(), false
	var n int64
	if run.lockless { // one batch or nothing (putlockless.go)
		var err error
		if n, err = c.commitLockless(ctx, run, encDir, encName+keySuffix, rec, held); err != nil {
			return err
		}
		folded = true
	} else if len(held) > 0 {
		var err error
		n, err = c.writeRecordWith(ctx, encDir, encName+keySuffix, rec, heldObjects(held))
		folded = err == nil
		run.finishHeld(held, folded)
		if !folded {
			c.log.Debug("folded put failed; sending the chunks first", "err", err)
		}
	}
	stop := c.timer("upload")
	for _, u := range uploads {
		if err := run.await(ctx, u); err != nil {
			return err
		}
	}
	stop()
	if !folded {
		stop = c.timer("record")
		err := retry(ctx, func() (err error) {
			n, err = c.writeRecord(ctx, encDir, encName+keySuffix, rec)
			return err
		})
		if err != nil {
			return err
		}
		stop()
	}
	sum.add(func(s *Summary) {
		s.Files++
		s.Bytes += int64(rec.Size)
		s.Chunks += len(rec.Chunks)
		s.ChunksKept += kept
		s.ChunksUploaded += sent
		s.BytesUploaded += n
		if fallback != nil {
			s.Fallback[reason(fallback)]++
		}
	})
	return nil
}

// reason shortens a key derivation error for the summary: an HTTP client error names its
// host, not Go's `Post "URL":` wording, and a long reason is cut between words.
func reason(err error) string {
	s := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			host = u.Host
		}
		s = strings.Replace(s, ue.Error(), host+": "+ue.Err.Error(), 1)
	}
	const most = 160
	if len(s) > most {
		cut := strings.LastIndexByte(s[:most], ' ')
		if cut < most/2 {
			cut = most
		}
		s = strings.TrimRight(s[:cut], " ,;:") + " ..."
	}
	return s
}
