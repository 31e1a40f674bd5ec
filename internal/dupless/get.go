package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// ErrIntegrity reports stored content that fails verification: a ciphertext whose hash
// does not match its key record, or guarded decryption refusing it.
var ErrIntegrity = errors.New("integrity check failed")

type getTask struct {
	src, local string
	rec        *record
	encDir     string
	objName    string
}

// Get retrieves src (a file, symlink or directory, recursively; "" is everything) into
// local. For a directory, local becomes that directory. Every file is verified (record
// authentication, ciphertext hash, guarded decryption) and written to a temporary file that
// is renamed into place only after all of it verified; failures are per file.
func (c *Client) Get(ctx context.Context, src, local string) (*Summary, error) {
	start := time.Now()
	sum := &Summary{}
	src = cleanPath(src)
	// A file is the common case: read its record straight away (one round trip), and look
	// for a directory only if there is none.
	var first *getTask
	kind := typeDir
	if src != "" {
		encDir, encName, err := c.encFile(src)
		if err != nil {
			return sum, err
		}
		t := getTask{src: src, local: local, encDir: encDir, objName: encName + keySuffix}
		rec, err := c.readRecord(ctx, encDir, t.objName)
		switch {
		case err == nil:
			t.rec, kind, first = rec, typeFile, &t
		case errors.Is(err, storage.ErrNotFound):
			if kind, err = c.kindOf(ctx, src); err != nil {
				return sum, err
			}
		default:
			return sum, fmt.Errorf("%s: %w", src, err)
		}
	}
	work := make(chan getTask)
	var wg sync.WaitGroup
	for range c.opts.Jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				err := c.getOne(ctx, t, sum)
				if err != nil {
					sum.addErr(t.src, err)
				}
				c.event(t.src, err)
			}
		}()
	}
	var dirs []getTask
	var err error
	if kind == typeDir {
		if err := os.MkdirAll(local, 0o700); err != nil {
			close(work)
			wg.Wait()
			return sum, err
		}
		if src != "" {
			enc, _ := c.keys.encPath(src)
			dirs = append(dirs, getTask{src: src, local: local, encDir: enc, objName: dirMetaName})
		}
		err = c.walk(ctx, src, func(rel string, isDir bool, encDir, objName string) error {
			t := getTask{src: joinPath(src, rel), local: filepath.Join(local, filepath.FromSlash(rel)), encDir: encDir, objName: objName}
			if isDir {
				if err := os.MkdirAll(t.local, 0o700); err != nil {
					return err
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
	} else {
		work <- *first
	}
	close(work)
	wg.Wait()
	// Directory modes and times last, deepest first, so writing files does not undo them.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := c.restoreDir(ctx, dirs[i]); err != nil {
			sum.addErr(dirs[i].src, err)
		}
		sum.add(func(s *Summary) { s.Dirs++ })
	}
	sum.Duration = time.Since(start)
	if err != nil {
		return sum, err
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
	if _, err := c.be.Stat(ctx, encDir, encName+keySuffix); err == nil {
		return typeFile, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return 0, err
	}
	if fi, err := c.be.Stat(ctx, encDir, encName); err == nil && fi.IsDir {
		return typeDir, nil
	} else if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return 0, err
	}
	return 0, fmt.Errorf("%s: %w", path, storage.ErrNotFound)
}

// walk visits every file and directory below the plain path dir (not dir itself), parents
// before children, calling fn with the path relative to dir.
func (c *Client) walk(ctx context.Context, dir string, fn func(rel string, isDir bool, encDir, objName string) error) error {
	encDir, err := c.keys.encPath(dir)
	if err != nil {
		return err
	}
	var visit func(encDir, rel string) error
	visit = func(encDir, rel string) error {
		entries, err := c.be.List(ctx, encDir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if isInternal(e.Name) {
				continue
			}
			plain, isDir, err := c.plainName(e)
			if err != nil {
				c.log.Warn("skipping an entry that is not this user's", "dir", encDir, "name", e.Name)
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
	r, err := c.readRecord(ctx, t.encDir, dirMetaName)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // created by mkdir -p of a parent or by another tool: keep defaults
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

func (c *Client) getOne(ctx context.Context, t getTask, sum *Summary) error {
	r := t.rec
	if r == nil {
		var err error
		if r, err = c.readRecord(ctx, t.encDir, t.objName); err != nil {
			return err
		}
	}
	if dir := filepath.Dir(t.local); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if r.Type == typeSymlink {
		tmp := t.local + ".veil-tmp-link"
		os.Remove(tmp)
		if err := os.Symlink(r.Target, tmp); err != nil {
			return err
		}
		ts := unix.NsecToTimespec(r.MTime)
		_ = unix.UtimesNanoAt(unix.AT_FDCWD, tmp, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW) // best effort
		sum.add(func(s *Summary) { s.Symlinks++ })
		return os.Rename(tmp, t.local)
	}
	if r.Type != typeFile {
		return fmt.Errorf("%w: record type %d where a file was expected", ErrRecord, r.Type)
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

// fetchChunks downloads and verifies a file's chunks, a few at a time, writing them in order.
func (c *Client) fetchChunks(ctx context.Context, r *record, w io.Writer) error {
	const ahead = 4
	type result struct {
		data []byte
		err  error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]chan result, len(r.Chunks))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	sem := make(chan struct{}, ahead)
	go func() {
		for i := range r.Chunks {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func(i int) {
				data, err := c.fetchChunk(ctx, &r.Chunks[i])
				if err != nil {
					err = fmt.Errorf("chunk %d of %d: %w", i+1, len(r.Chunks), err)
				}
				results[i] <- result{data, err}
			}(i)
		}
	}()
	for i := range r.Chunks {
		res := <-results[i]
		<-sem
		if res.err != nil {
			return res.err
		}
		if _, err := w.Write(res.data); err != nil {
			return err
		}
		c.bytesDone(int64(len(res.data)))
	}
	return nil
}

func (c *Client) fetchChunk(ctx context.Context, ref *chunkRef) ([]byte, error) {
	dir, name := chunkLocation(ref.CtHash)
	rc, err := c.be.Get(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	limit := int64(ref.MsgLen) + 2*mle.Size + mle.HeaderSize + 1
	ct, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return nil, err
	}
	if sha(ct) != ref.CtHash {
		return nil, fmt.Errorf("%w: ciphertext does not match its key record (tampered, swapped or truncated)", ErrIntegrity)
	}
	msg, err := mle.Dec(ref.Key, ct, mle.GuardDigest(ref.Digest))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIntegrity, err)
	}
	if len(msg) != int(ref.MsgLen) {
		return nil, fmt.Errorf("%w: message length %d, record says %d", ErrIntegrity, len(msg), ref.MsgLen)
	}
	data, err := unpack(ref, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIntegrity, err)
	}
	if len(data) != int(ref.PlainLen) {
		return nil, fmt.Errorf("%w: chunk length %d, record says %d", ErrIntegrity, len(data), ref.PlainLen)
	}
	return data, nil
}
