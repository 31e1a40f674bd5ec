package dupless

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/verr"
)

// ErrIntegrity reports stored content that fails verification: a ciphertext whose hash
// does not match its key record, or guarded decryption refusing it. It wraps the storage
// service's and mle's reason where there is one, and errors.Is(err, verr.ErrIntegrity) holds.
var ErrIntegrity = verr.NewIntegrity("integrity check failed")

type getTask struct {
	src, local string
	root       string // the destination the user named: nothing below it is a symlink we follow
	rec        *record
	encDir     string
	objName    string
	lazy       bool // a directory restored only if --include put a file in it
	existed    bool // a directory that was there before get ran (--overwrite never leaves its mode and times)
}

// dirExisted reports whether local is a directory already (before get writes below it).
func dirExisted(local string) bool {
	fi, err := os.Lstat(local)
	return err == nil && fi.IsDir()
}

// links are symlinks to create after every file and directory exists, so no file is ever
// written through a link restored in the same run.
type links struct {
	mu sync.Mutex
	l  []linkTask
}

type linkTask struct {
	t getTask
	r *record
}

// Get retrieves src (a file, symlink or directory, recursively; "" is everything) into
// local. For a directory, local becomes that directory. Every file is verified (record
// authentication, ciphertext hash, guarded decryption) and written to a temporary file that
// is renamed into place only after all of it verified; failures are per file, but for
// src a lone file (or link), whose failure is the run's error (Summary.lone).
func (c *Client) Get(ctx context.Context, src, local string) (*Summary, error) {
	return c.get(ctx, src, local, false)
}

// GetInto is Get with the command line's placement rules (intoDir): a stored directory
// asked for at an existing local directory of another name goes inside it, as cp does.
func (c *Client) GetInto(ctx context.Context, src, dest string) (*Summary, error) {
	return c.get(ctx, src, dest, true)
}

func (c *Client) get(ctx context.Context, src, local string, into bool) (*Summary, error) {
	start := time.Now()
	sum := &Summary{}
	folderOnly := strings.HasSuffix(src, "/") && cleanPath(src) != ""
	src = cleanPath(src)
	// A file is the common case: its record is read while the root is looked up (the same
	// round trip), then checked against that root as always; a directory is looked for
	// only if there is none.
	if src != "" && !c.pinned() {
		if encDir, encName, err := c.encFile(src); err == nil {
			c.startReadAhead(ctx, encDir, encName+keySuffix)
			defer c.ahead.stop()
		}
	}
	if err := c.refresh(ctx); err != nil {
		return sum, err
	}
	var first *getTask
	kind := typeDir
	if src != "" {
		encDir, encName, err := c.encFile(src)
		if err != nil {
			return sum, err
		}
		t := getTask{src: src, local: local, root: filepath.Dir(local), encDir: encDir, objName: encName + keySuffix}
		rec, err := c.readRecord(ctx, encDir, t.objName)
		switch {
		case err == nil && folderOnly:
			return sum, fileWithSlash(src) // NAME/ is a folder, as rm, ls and cat take it
		case err == nil:
			if t.local, err = fileDest(local, src); err != nil {
				return sum, err
			}
			t.root = filepath.Dir(t.local)
			t.rec, kind, first = rec, typeFile, &t
		case errors.Is(err, storage.ErrNotFound):
			if err := c.missing(storage.Join(encDir, t.objName)); err != nil {
				return sum, err
			}
			if kind, err = c.kindOf(ctx, src); err != nil {
				return sum, err
			}
			if kind == typeFile { // its record is named but could not be read (gone meanwhile)
				return sum, fmt.Errorf("%s: its record is listed but cannot be read: %w", src, storage.ErrNotFound)
			}
		default:
			return sum, fmt.Errorf("%s: %w", src, err)
		}
	}
	// A disk without room stops the run at the first file that finds none, a service that
	// is down once it has been for outageGrace (getstop.go).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sum.stop = cancel
	ls := &links{}
	work, finish := workers(c, func(t getTask) {
		err := c.getOne(ctx, t, sum, ls)
		if err == nil {
			sum.reachable() // the service answered: an outage, if any, is over
		}
		c.done(sum, t.src, err)
	})
	var dirs []getTask
	var err error
	seen := map[string]bool{}
	partial := "" // the folder this get created, or an unfinished one's (getresume.go)
	if kind == typeDir {
		if into {
			local = intoDir(local, src)
		}
		if err := dirDest(local); err != nil {
			finish()
			return sum, err
		}
		resumed := into && src != "" && isPartial(local, src) // its mode and times are still to set
		existed := dirExisted(local) && !resumed
		if err := os.MkdirAll(local, 0o700); err != nil {
			finish()
			return sum, err
		}
		if into && src != "" && !existed {
			partial = local
			markPartial(local, src)
		}
		if src != "" {
			enc, _ := c.keys.encPath(src)
			dirs = append(dirs, getTask{src: src, local: local, root: local, encDir: enc, objName: dirMetaName, existed: existed})
		}
		err = c.walk(ctx, src, false, func(rel string, isDir bool, encDir, objName string) error {
			t := getTask{src: joinPath(src, rel), local: filepath.Join(local, filepath.FromSlash(rel)), root: local, encDir: encDir, objName: objName}
			if isDir {
				t.existed = dirExisted(t.local)
			}
			seen[storage.Join(encDir, objName)] = true
			want, lazy := c.selected(rel, isDir)
			if !want {
				sum.add(func(s *Summary) { s.Excluded++ })
				return nil
			}
			if lazy {
				t.lazy = true
				dirs = append(dirs, t)
				return nil
			}
			if isDir {
				if err := safeDir(t.root, t.local); err != nil {
					c.done(sum, t.src, err) // and each file below it fails the same check
					return nil
				}
				dirs = append(dirs, t)
				return nil
			}
			select {
			case work <- t:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		})
		if err == nil {
			enc, _ := c.keys.encPath(src)
			seen[storage.Join(enc, dirMetaName)] = true
			for _, p := range c.unseen(enc, seen) {
				if err := c.stale(fmt.Errorf("deleted: %w", ErrStale)); err != nil {
					c.done(sum, p, err)
				}
			}
		}
	} else {
		sum.quiet = true // a lone file: its outcome is held, its failure the run's error (lone)
		work <- *first
	}
	finish()
	if err != nil && stopsRun(err) { // the walk found the service down: nothing more to read
		sum.halt(err)
	}
	for _, l := range ls.l {
		restored, err := c.restoreLink(l.t, l.r, sum)
		if restored {
			sum.add(func(s *Summary) { s.Symlinks++ })
		}
		c.done(sum, l.t.src, err)
	}
	// Directory modes and times last, deepest first, so writing files does not undo them.
	for i := len(dirs) - 1; i >= 0; i-- {
		if dirs[i].lazy {
			if _, err := os.Lstat(dirs[i].local); err != nil || safeDir(dirs[i].root, dirs[i].local) != nil {
				continue // nothing selected below it, or not a real directory below DEST (never followed)
			}
		}
		if dirs[i].existed && c.opts.Overwrite == OverwriteNever {
			continue // "leave every existing entry as it is": its mode and times too (found by review)
		}
		if err := c.restoreDir(ctx, dirs[i]); err != nil {
			sum.addErr(dirs[i].src, err) // reported by the summary, or by the run's error once halted
			if sum.shouldHalt(err) {
				sum.halt(err) // not a folder's record read per folder, each retried, with the service down
			}
		}
		sum.add(func(s *Summary) { s.Dirs++ })
	}
	sum.Duration = time.Since(start)
	if err := getStopped(ctx, local, sum); err != nil {
		return sum, err
	}
	if err != nil {
		return sum, err
	}
	if kind == typeFile {
		if err := sum.lone(); err != nil {
			return sum, err
		}
		c.reportHeld(sum)
	}
	if partial != "" && ctx.Err() == nil && sum.Err() == nil {
		clearPartial(partial)
	}
	return sum, ctx.Err()
}

// kindOf tells whether path is stored as a file or symlink (typeFile) or a directory.
func (c *Client) kindOf(ctx context.Context, path string) (int, error) {
	if path == "" {
		return typeDir, nil
	}
	encDir, encName, err := c.encFile(path)
	if err != nil {
		return 0, err
	}
	if _, err := c.statEntry(ctx, encDir, encName+keySuffix); err == nil {
		return typeFile, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return 0, err
	}
	if fi, err := c.statEntry(ctx, encDir, encName); err == nil && fi.IsDir {
		return typeDir, nil
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, err
	}
	return 0, fmt.Errorf("%s: %w", path, storage.ErrNotFound)
}

// errForeignEntry stops a strict walk at an entry this key cannot decrypt.
var errForeignEntry = errors.New("not encrypted under this key (another user's, or not written by veil)")

// unreadableEntry is err about the entry name of the encrypted folder encDir whose name
// cannot be decrypted: it names the user's folder, and the stored object beside it (the
// entry's only name an operator can find).
func (c *Client) unreadableEntry(encDir, name string, err error) error {
	if errors.Is(err, ErrLongNameMissing) {
		return fmt.Errorf("%s: an entry's name cannot be read: %w", displayPath(c.plainDir(encDir)), err)
	}
	return fmt.Errorf("%s: an entry (stored object %s): %w", displayPath(c.plainDir(encDir)), storage.Join(encDir, name), err)
}

// inFolder is err (a listing's) about the encrypted folder encDir, said about the user's
// folder unless it names it already; a storage error keeps the object it names beside.
func (c *Client) inFolder(encDir string, err error) error {
	p := displayPath(c.plainDir(encDir))
	msg := err.Error()
	for _, q := range []string{p, "/" + p} { // describeDir says "/docs at snapshot 3"
		if strings.HasPrefix(msg, q+":") || strings.HasPrefix(msg, q+" ") {
			return err
		}
	}
	return fmt.Errorf("%s: %w", p, err)
}

// walk visits every file and directory below the plain path dir (not dir itself), parents
// before children, calling fn with the path relative to dir. Entries this key cannot
// decrypt are skipped with a warning, or, with strict (for commands that delete), stop the
// walk: never delete or prune what you cannot see.
func (c *Client) walk(ctx context.Context, dir string, strict bool, fn func(rel string, isDir bool, encDir, objName string) error) error {
	encDir, err := c.keys.encPath(dir)
	if err != nil {
		return err
	}
	var visit func(encDir, rel string) error
	visit = func(encDir, rel string) error {
		entries, err := c.listDir(ctx, encDir)
		if err != nil {
			return c.inFolder(encDir, err)
		}
		for _, e := range entries {
			if isInternal(e.Name) {
				continue
			}
			if err := c.preloadLongName(ctx, e.Name); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			plain, isDir, err := c.plainName(e)
			if errors.Is(err, ErrLongNameMissing) {
				return c.unreadableEntry(encDir, e.Name, err)
			}
			if err != nil {
				if strict {
					return c.unreadableEntry(encDir, e.Name, errForeignEntry)
				}
				c.log.Warn("skipping an entry that is not this user's", "folder", displayPath(c.plainDir(encDir)), "object", storage.Join(encDir, e.Name))
				continue
			}
			r := joinPath(rel, plain)
			if isDir {
				if err := fn(r, true, storage.Join(encDir, e.Name), dirMetaName); err != nil {
					return err
				}
				if err := visit(storage.Join(encDir, e.Name), r); err != nil {
					return err
				}
				continue
			}
			if err := fn(r, false, encDir, e.Name); err != nil {
				return err
			}
		}
		return nil
	}
	return visit(encDir, "")
}

// plainName decrypts a listed entry: a directory, or a file's ".key" record.
func (c *Client) plainName(e storage.Info) (string, bool, error) {
	if e.IsDir {
		n, err := c.keys.decName(e.Name)
		return n, true, err
	}
	base, ok := cutSuffix(e.Name, keySuffix)
	if !ok {
		return "", false, errForeignName
	}
	n, err := c.keys.decName(base)
	return n, false, err
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}

func (c *Client) restoreDir(ctx context.Context, t getTask) error {
	// Chmod and Chtimes follow links: every component must be a real directory.
	if err := safeDir(t.root, t.local); err != nil {
		return err
	}
	r, err := c.readRecord(ctx, t.encDir, dirMetaName)
	if errors.Is(err, storage.ErrNotFound) {
		// Created by mkdir -p of a parent or by another tool: keep defaults, unless the
		// root lists its metadata.
		return c.missing(storage.Join(t.encDir, dirMetaName))
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(t.local, goMode(r.Mode)); err != nil {
		return err
	}
	mt := time.Unix(0, r.MTime)
	return os.Chtimes(t.local, mt, mt)
}

func (c *Client) getOne(ctx context.Context, t getTask, sum *Summary, ls *links) error {
	r := t.rec
	if r == nil {
		var err error
		if r, err = c.readRecord(ctx, t.encDir, t.objName); err != nil {
			return err
		}
	}
	if r.Type == typeSymlink {
		ls.mu.Lock()
		ls.l = append(ls.l, linkTask{t, r})
		ls.mu.Unlock()
		return nil
	}
	if r.Type == typeSpecial {
		return c.restoreSpecial(t, r, sum)
	}
	if err := safeDir(t.root, filepath.Dir(t.local)); err != nil {
		return err
	}
	if r.Type != typeFile {
		return fmt.Errorf("%w: record type %d where a file was expected", ErrRecord, r.Type)
	}
	if err := c.mayReplace(t.local, r); errors.Is(err, errKept) {
		sum.add(func(s *Summary) { s.Kept++ })
		return nil
	} else if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(t.local), ".veil-get-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := c.fetchChunks(ctx, r, f); err != nil {
		return err
	}
	if err := f.Chmod(goMode(r.Mode)); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	mt := time.Unix(0, r.MTime)
	if err := os.Chtimes(f.Name(), mt, mt); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), t.local); err != nil {
		return err
	}
	ok = true
	sum.add(func(s *Summary) { s.Files++; s.Bytes += int64(r.Size); s.Chunks += len(r.Chunks) })
	return nil
}

func (c *Client) restoreLink(t getTask, r *record, sum *Summary) (restored bool, err error) {
	if err := safeDir(t.root, filepath.Dir(t.local)); err != nil {
		return false, err
	}
	if err := c.mayReplace(t.local, r); errors.Is(err, errKept) {
		sum.add(func(s *Summary) { s.Kept++ })
		return false, nil
	} else if err != nil {
		return false, err
	}
	tmp, err := makeTemp(filepath.Dir(t.local), func(p string) error { return os.Symlink(r.Target, p) })
	if err != nil {
		return false, err
	}
	ts := unix.NsecToTimespec(r.MTime)
	_ = unix.UtimesNanoAt(unix.AT_FDCWD, tmp, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW) // best effort
	if err := os.Rename(tmp, t.local); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// safeDir makes sure dir exists below root without following a symlink on the way: every
// component under root must be a real directory (created if missing). root itself is the
// user's choice and may be a link.
func safeDir(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%s is outside %s", dir, root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return err
	}
	p := root
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if c == "." || c == "" {
			continue
		}
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("refusing to write through the symlink %s", p)
		case !fi.IsDir():
			return fmt.Errorf("%s exists and is not a directory", p)
		}
	}
	return nil
}

// makeTemp creates an entry under a new random name in dir with create (which must fail
// with fs.ErrExist when the name is taken) and returns its path. The name is short, so an
// entry of the longest name veil stores (255 bytes) can be made beside its final name and
// renamed onto it; an existing entry is never removed or reused.
func makeTemp(dir string, create func(path string) error) (string, error) {
	for range 100 {
		var b [8]byte
		rand.Read(b[:])
		p := filepath.Join(dir, ".veil-get-"+hex.EncodeToString(b[:]))
		if err := create(p); !errors.Is(err, fs.ErrExist) {
			return p, err
		}
	}
	return "", fmt.Errorf("no free temporary name in %s", dir)
}
