package dupless

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// excluded reports whether an entry (its name, and its slash-separated path below the
// PATH argument) matches one of Options.Exclude.
func (c *Client) excluded(name, rel string) bool { return excludedBy(c.opts.Exclude, name, rel) }

// excludedBy reports whether a name, or its path rel below a PATH argument, matches one
// of the patterns.
func excludedBy(patterns []string, name, rel string) bool {
	for _, p := range patterns {
		if m, _ := filepath.Match(p, name); m {
			return true
		}
		if m, _ := filepath.Match(p, rel); m {
			return true
		}
	}
	return false
}

// putTask is one local entry to store at a destination path.
type putTask struct {
	local string
	dest  string
	info  fs.FileInfo
	above *dirGate // the gate of the folder this run stores it in (nil: none)
	own   *dirGate // a folder's: opened once it is checked (putclash.go)
}

// Put stores each local path (file, symlink or directory, recursively) under
// dest/<base name of the path>. Per-file failures (unreadable files, a folder where a
// file is stored) are recorded in the summary and do not stop the run; Summary.Err reports them.
// One small file goes without the lock when it can (putlockless.go); if its one batch is
// refused, it is put again under the lock.
func (c *Client) Put(ctx context.Context, locals []string, dest string) (*Summary, error) {
	return c.putScanned(ctx, locals, dest, nil)
}

// PutScanned is Put of the paths and destination pre was started with, using pre's walk
// of them (which ran while the profile was being opened) instead of walking them again.
func (c *Client) PutScanned(ctx context.Context, pre *Prescan) (*Summary, error) {
	return c.putScanned(ctx, pre.locals, pre.dest, pre)
}

func (c *Client) putScanned(ctx context.Context, locals []string, dest string, pre *Prescan) (*Summary, error) {
	if c.locklessCandidate(locals) {
		c.deriveLoneEarly(ctx, locals[0])
		defer c.ks.dropEarly()
		sum, err := c.put(ctx, locals, dest, true, pre)
		if !errors.Is(err, errNeedLock) {
			return sum, err
		}
	}
	return c.put(ctx, locals, dest, false, pre)
}

func (c *Client) put(ctx context.Context, locals []string, dest string, lockless bool, pre *Prescan) (_ *Summary, err error) {
	start := time.Now()
	if c.opts.Force { // a repair: the service checks what it holds of each chunk sent (storage.WithVerify)
		ctx = storage.WithVerify(ctx)
	}
	sum := &Summary{Fallback: map[string]int{}, quiet: lockless, caller: ctx}
	if lockless {
		defer func() {
			if errors.Is(err, errNeedLock) {
				return // put again under the lock, which reports it
			}
			if sum.Bytes > 0 {
				c.bytesDone(sum.Bytes) // committed: its progress, once
			}
			if err == nil { // failed as a whole: the command's error says it, not its files
				c.reportHeld(sum)
			}
		}()
	}
	defer func() {
		if c.opts.Keys != nil { // without a key server (--no-keyserver) random keys are the plan, not a fallback
			sum.FallbackN = sum.FallbackFiles()
		}
		slices.SortFunc(sum.Interrupted, func(a, b StoppedFile) int { return strings.Compare(a.Path, b.Path) })
	}()
	dest = cleanPath(dest)
	cached := c.startCacheRead() // read while the lock and the root are fetched
	stop := c.timer("lock")
	var unlock func() error
	switch {
	case lockless:
		unlock, err = c.beginLockless(ctx)
	case c.putThen != nil: // sync: its removals run under this lock (lockRemoving)
		unlock, err = c.lockRemoving(ctx)
	default:
		unlock, err = c.lock(ctx, false)
		if err == nil && c.markSeen.Swap(false) {
			c.clearAbandonedMark(ctx)
		}
	}
	stop()
	if err != nil {
		return sum, err
	}
	var cache *runCache
	lone := lockless // one file, stored alone
	defer func() {
		stop := c.timer("unlock")
		unlockInto(&err, unlock)
		stop()
		// A lone file's put leaves the put cache as it was. Rewriting it (every entry of
		// the namespace, sealed) for the one entry this put would add was half of a lone
		// put's CPU, and a third of its time in a namespace of 5,000 files; the old cache
		// stays sound: its entries count only while the root lists the same record
		// hashes. The next put of this file reads its record and the file once (racy clean:
		// putfile.go, previous); the next put of a tree
		// rewrites the cache.
		if !lone {
			c.saveCache(cache)
		}
	}()
	if !lockless { // a lock-free put's batch requires no mark (commitLockless)
		if err := c.refusePending(ctx, "", "", putNames(locals, dest)...); err != nil {
			return sum, err
		}
	}
	if c.putFirst != nil {
		if err := c.putFirst(ctx); err != nil { // Sync's replacements of what changed kind
			return sum, err
		}
	}
	dirs := &dirCache{m: map[string]*dirEntries{}, byStat: lockless} // one file: two names looked up, not its whole directory listed
	var conds []storage.Object
	answered := false
	if lockless {
		conds, answered = c.loneFromRoot(locals[0], dest, dirs)
		defer c.draft.stop() // drafted, and not taken: a put that went otherwise
	}
	if !answered {
		if err := c.noFileOnPath(ctx, dest); err != nil {
			return sum, err
		}
	}
	// A service that can store nothing (disk full, its storage down) stops the run at the
	// first file that says so, instead of failing every other file in turn.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sum.stop = cancel
	tasks, total, err := c.scan(locals, dest, sum, pre)
	if err != nil {
		return sum, err
	}
	// The folders of dest get records if they have none, under the lock (whose put does
	// it), once the walk found something to store: found by review, a put of missing
	// files published a snapshot holding dest's folders, empty.
	if len(tasks) > 0 {
		if missing, err := c.unrecordedFolders(ctx, dest, true); err != nil {
			return sum, err
		} else if len(missing) > 0 && lockless {
			return sum, errNeedLock
		} else if err := c.recordFolders(ctx, dest, true); err != nil {
			return sum, err
		}
	}
	if c.opts.Events.Total != nil {
		c.opts.Events.Total(len(tasks), total)
	}
	lone = lone || len(tasks) == 1 && tasks[0].info.Mode().IsRegular()
	// Every entry in walk order (directories before what they hold); files go to the
	// workers, a directory's record to the run's committers, so the walk never waits on
	// a directory's round trips (a put creates its parents: order is not needed).
	cache = c.loadCache(cached)
	run := newPutRun(c.be, sum)
	run.cache, run.putObj, run.batched, run.lockless = cache, c.putObject, c.batched, lockless
	run.dirs, run.conds = dirs, conds
	if c.foldable(tasks) {
		run.held = &heldUploads{}
	} else if lockless {
		return sum, errNeedLock
	}
	defer func() { run.releaseHeld(); run.wait() }() // no upload outlives Put
	work, finish := workers(c, func(t putTask) {
		if err := t.above.wait(ctx); err != nil {
			c.done(sum, t.local, err)
			return
		}
		if t.info.Mode().IsRegular() {
			c.putFile(ctx, t, sum, run) // reports the file itself, at once or from its commit
			return
		}
		c.done(sum, t.local, c.putOther(ctx, t, sum, run))
	})
	gates := dirGates{}
	for _, t := range tasks {
		if ctx.Err() != nil {
			break // cancelled: report it once, not once per remaining file
		}
		gates.assign(&t)
		if t.info.IsDir() {
			run.commit(func() { c.done(sum, t.local, c.putDir(ctx, t, sum, run)) })
			continue
		}
		select {
		case work <- t:
		case <-ctx.Done():
		}
	}
	finish()
	run.waitCommits()
	if run.needLock.Load() {
		return sum, errNeedLock
	}
	sum.Duration = time.Since(start)
	if cause := context.Cause(ctx); cause != nil && stopsRun(cause) {
		return sum, fmt.Errorf("put stopped: %w", cause)
	}
	if lockless && ctx.Err() == nil {
		if err := c.unbatchedStillNewest(ctx); err != nil {
			return sum, err
		}
	}
	if c.putThen != nil && ctx.Err() == nil && len(sum.Errors) == 0 {
		return sum, c.putThen(ctx) // Sync's removals, under the same lock: one snapshot (sync.go)
	}
	return sum, ctx.Err()
}

// scan lists what to store where (walkLocals), or takes it from pre when pre walked the
// same paths for the same destination and exclusions; failures go into sum either way.
func (c *Client) scan(locals []string, dest string, sum *Summary, pre *Prescan) (tasks []putTask, total int64, err error) {
	w := pre.result(locals, dest, c.opts.Exclude)
	if w == nil {
		w = walkLocals(locals, dest, c.opts.Exclude)
	}
	for _, f := range w.failed {
		c.done(sum, f.path, f.err)
	}
	if w.excluded > 0 {
		sum.add(func(s *Summary) { s.Excluded += w.excluded })
	}
	for kind, n := range w.notStored {
		sum.add(func(s *Summary) {
			if s.NotStored == nil {
				s.NotStored = map[string]int{}
			}
			s.NotStored[kind] += n
		})
	}
	return w.tasks, w.total, w.err
}

// walked is one walk of put's local paths.
type walked struct {
	tasks     []putTask
	total     int64 // bytes in regular files
	failed    []walkFailure
	excluded  int
	notStored map[string]int // entries that cannot be stored (cannotStore), by kind
	err       error
}

type walkFailure struct {
	path string
	err  error
}

// walkLocals walks the local paths and lists what to store where: every entry, except
// excluded ones, sockets (cannotStore: counted) and a second source for one destination
// (recorded as failed). It needs no key and no connection.
func walkLocals(locals []string, dest string, exclude []string) *walked {
	w := &walked{notStored: map[string]int{}}
	from := map[string]string{} // destination -> the local path stored there
	for _, l := range locals {
		base := putBase(l)
		err := filepath.Walk(l, func(p string, fi fs.FileInfo, err error) error {
			rel, _ := filepath.Rel(l, p)
			d := joinPath(dest, base, filepath.ToSlash(rel))
			if err != nil {
				w.failed = append(w.failed, walkFailure{p, err})
				return nil
			}
			if rel != "." && excludedBy(exclude, fi.Name(), filepath.ToSlash(rel)) {
				w.excluded++
				if fi.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if cannotStore(fi.Mode()) {
				w.notStored[fileKind(fi.Mode())]++
				return nil
			}
			if other, dup := from[d]; dup {
				w.failed = append(w.failed, walkFailure{p, fmt.Errorf("has the same destination %q as %s: not stored", d, other)})
				if fi.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			from[d] = p
			w.tasks = append(w.tasks, putTask{local: p, dest: d, info: fi})
			if fi.Mode().IsRegular() {
				w.total += fi.Size()
			}
			return nil
		})
		if err != nil {
			return &walked{err: err}
		}
	}
	return w
}

// putNames are the names a put of locals to dest stores under.
func putNames(locals []string, dest string) []string {
	out := make([]string, len(locals))
	for i, l := range locals {
		out[i] = joinPath(dest, putBase(l))
	}
	return out
}

// putBase is the name a put stores the local path l under in its destination: l's last
// element, or none for ".", ".." and "/", whose contents go into the destination itself
// (as 'cp -r . DEST' copies them). Found by a user walkthrough: 'veil put ..' failed every
// file with 'invalid name: ".."'.
func putBase(l string) string {
	switch b := filepath.Base(filepath.Clean(l)); b {
	case ".", "..", string(filepath.Separator):
		return ""
	default:
		return b
	}
}

func joinPath(parts ...string) string {
	out := ""
	for _, p := range parts {
		if p = cleanPath(p); p != "" {
			out = storage.Join(out, p)
		}
	}
	return out
}

// putDir stores a folder's record, once the folder above it (if this run stores it) is
// checked; it opens t.own as soon as it knows whether the folder's name is free.
func (c *Client) putDir(ctx context.Context, t putTask, sum *Summary, run *putRun) error {
	var blocked error // what the folder's entries get: errUnderClash, or nil
	defer func() { t.own.open(blocked) }()
	if err := t.above.wait(ctx); err != nil {
		blocked = err
		return err
	}
	enc, err := c.keys.encPath(t.dest)
	if err != nil {
		return err
	}
	r := &record{Type: typeDir, Mode: unixMode(t.info.Mode()), MTime: t.info.ModTime().UnixNano()}
	if run.cache.dirSame(c, enc, r) {
		sum.add(func(s *Summary) { s.Dirs++ })
		return nil
	}
	if enc != "" {
		parent, name := storage.Split(enc)
		if isFile, err := run.dirs.has(ctx, c.be, parent, name+keySuffix); err != nil {
			return err
		} else if isFile {
			blocked = errUnderClash
			return clashError(t.dest)
		}
		run.dirs.absentIn(parent, name, enc)
	}
	t.own.open(nil) // its entries go on while its record is written
	if c.stored(ctx, run, enc, dirMetaName, r) {
		sum.add(func(s *Summary) { s.Dirs++ })
		return nil
	}
	if err := c.storeLongNames(ctx, enc); err != nil {
		return err
	}
	// The record creates the directory (a put creates its parents): no request of its own.
	n, err := c.writeRecord(ctx, enc, dirMetaName, r)
	if err == nil {
		run.cache.note(c, storage.Join(enc, dirMetaName), r, nil)
	}
	sum.add(func(s *Summary) { s.Dirs++; s.BytesUploaded += n })
	return err
}

// putOther stores a task that is neither a directory nor a regular file: a symlink, a
// FIFO or a device, or else fails (the walk skips what cannot be stored: cannotStore).
func (c *Client) putOther(ctx context.Context, t putTask, sum *Summary, run *putRun) error {
	mode := t.info.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(t.local)
		if err != nil {
			return err
		}
		if len(target) > 4096 {
			return errors.New("symlink target longer than 4096 bytes")
		}
		r := &record{Type: typeSymlink, Mode: unixMode(mode), MTime: t.info.ModTime().UnixNano(), Target: target}
		return c.putMetaRecord(ctx, run, t, r, sum, func(s *Summary) { s.Symlinks++ })
	case mode&fs.ModeNamedPipe != 0 || mode&fs.ModeDevice != 0:
		return c.putSpecial(ctx, t, sum, run)
	default:
		return fmt.Errorf("cannot store a %s (files, directories, symlinks, FIFOs and devices only)", fileKind(mode))
	}
}

// stored reports whether the record of a directory or symlink is already stored exactly
// as r (same kind, mode, mtime and target), so that put need not write it again. Any
// doubt (not listed, unreadable, different) means no. A record found the same is noted in
// the put cache, which answers the next put without a request (dirSame, linkSame).
func (c *Client) stored(ctx context.Context, run *putRun, encDir, objName string, r *record) bool {
	if c.opts.Force {
		return false
	}
	path := storage.Join(encDir, objName)
	if exists, err := run.dirs.has(ctx, c.be, encDir, objName); err != nil || !exists {
		return false
	}
	old, err := c.readRecord(ctx, encDir, objName)
	same := err == nil && old.Type == r.Type && old.Mode == r.Mode && old.MTime == r.MTime && old.Target == r.Target
	if same {
		run.cache.note(c, path, old, nil)
	}
	return same
}

func (c *Client) encFile(dest string) (encDir, encName string, err error) {
	if dest == "" {
		return "", "", errors.New("a file needs a name")
	}
	dir, name := storage.Split(dest)
	if encDir, err = c.keys.encPath(dir); err != nil {
		return
	}
	encName, err = c.keys.encName(name)
	return
}

// putMetaRecord stores r, a record without chunks (a link, FIFO or device), at t.dest
// unless the same record is stored there already; count adds it to the summary.
func (c *Client) putMetaRecord(ctx context.Context, run *putRun, t putTask, r *record, sum *Summary, count func(*Summary)) error {
	encDir, encName, err := run.encFile(c, t.dest)
	if err != nil {
		return err
	}
	if run.cache.linkSame(c, encDir, encName, r) {
		sum.add(count)
		return nil
	}
	if err := run.notADir(ctx, c.be, encDir, encName, t.dest); err != nil {
		return err
	}
	if c.stored(ctx, run, encDir, encName+keySuffix, r) {
		sum.add(count)
		return nil
	}
	n, err := c.writeRecord(ctx, encDir, encName+keySuffix, r)
	if err == nil {
		run.cache.note(c, storage.Join(encDir, encName+keySuffix), r, nil)
	}
	sum.add(func(s *Summary) { count(s); s.BytesUploaded += n })
	return err
}
