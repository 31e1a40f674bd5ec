package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

// ensureDir creates dir and its parents, fsyncing each parent that gained an entry.
func (b *Backend) ensureDir(dir string) error {
	if dir == "" {
		return nil
	}
	cur := b.root
	for _, c := range strings.Split(dir, "/") {
		next := filepath.Join(cur, c)
		err := os.Mkdir(next, 0o755)
		switch {
		case err == nil:
			if err := atomicfile.SyncDir(cur); err != nil {
				return err
			}
		case errors.Is(err, fs.ErrExist):
			fi, serr := os.Stat(next)
			if serr != nil {
				return serr
			}
			if !fi.IsDir() {
				return fmt.Errorf("%w: %s is a file", storage.ErrNotDir, strings.TrimPrefix(next, b.root+"/"))
			}
		case errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("%w: %v", storage.ErrNotDir, b.plain("", err))
		default:
			return err
		}
		cur = next
	}
	return nil
}

// List returns the entries of dir sorted by name.
func (b *Backend) List(ctx context.Context, dir string) ([]storage.Info, error) {
	p, err := b.dirPath(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return nil, fmt.Errorf("list %s: %w", dir, storage.ErrNotDir)
		}
		return nil, b.fail("list", dir, err)
	}
	out := make([]storage.Info, 0, len(ents))
	for _, e := range ents {
		if dir == "" && e.Name() == TempDirName {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed while listing
		}
		out = append(out, info(dir, fi))
	}
	return out, nil
}

// Delete removes a file or an empty directory.
func (b *Backend) Delete(ctx context.Context, dir, name string) error {
	p, err := b.path(dir, name)
	if err != nil {
		return err
	}
	key := storage.Join(dir, name)
	unlock, err := b.lock(ctx)
	if err != nil {
		return b.fail("delete", key, err)
	}
	defer unlock()
	if _, err := os.Lstat(p); err != nil {
		return b.fail("delete", key, err)
	}
	if err := os.Remove(p); err != nil {
		return b.fail("delete", key, err)
	}
	if err := atomicfile.SyncDir(filepath.Dir(p)); err != nil {
		return b.fail("delete", key, err)
	}
	return nil
}

// Search returns every entry named name in dir or below, sorted by path.
func (b *Backend) Search(ctx context.Context, dir, name string) ([]storage.Info, error) {
	p, err := b.dirPath(dir)
	if err != nil {
		return nil, err
	}
	if err := storage.CheckName(name); err != nil {
		return nil, err
	}
	var out []storage.Info
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == p {
				return err
			}
			return nil // vanished while walking
		}
		if path == p {
			if !d.IsDir() {
				return fmt.Errorf("%w", storage.ErrNotDir)
			}
			return nil
		}
		if d.IsDir() && d.Name() == TempDirName && filepath.Dir(path) == b.root {
			return filepath.SkipDir
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Name() == name {
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(b.root, filepath.Dir(path))
			if rel == "." {
				rel = ""
			}
			out = append(out, info(filepath.ToSlash(rel), fi))
		}
		return nil
	})
	if err != nil {
		return nil, b.fail("search", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path() < out[j].Path() })
	return out, nil
}

// Create makes dir and its parents.
func (b *Backend) Create(ctx context.Context, dir string) error {
	if _, err := b.dirPath(dir); err != nil {
		return err
	}
	if err := b.ensureDir(dir); err != nil {
		return b.fail("create", dir, err)
	}
	return nil
}

// Move renames a file or a directory tree without replacing an existing destination.
func (b *Backend) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	return b.move(ctx, srcDir, srcName, dstDir, dstName, nil)
}

// move is Move, and MoveMatch when match is set: under the commit lock (lock.go), the
// source's content must then hash to *match (ErrChanged otherwise).
func (b *Backend) move(ctx context.Context, srcDir, srcName, dstDir, dstName string, match *[32]byte) error {
	src, err := b.path(srcDir, srcName)
	if err != nil {
		return err
	}
	dst, err := b.path(dstDir, dstName)
	if err != nil {
		return err
	}
	srcKey, dstKey := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	what := fmt.Sprintf("move %s to %s", srcKey, dstKey)
	unlock, err := b.lock(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
	}
	defer unlock()
	if match != nil {
		same, err := hashIs(src, *match)
		if err != nil {
			return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
		}
		if !same {
			return fmt.Errorf("%s: %w", what, storage.ErrChanged)
		}
	}
	return b.moveLocked(what, src, dst, srcKey, dstKey, dstDir)
}

func (b *Backend) moveLocked(what, src, dst, srcKey, dstKey, dstDir string) error {
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
	}
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("%s: %w", what, storage.ErrExists)
	}
	if strings.HasPrefix(dst+"/", src+"/") {
		return fmt.Errorf("%s: %w: a directory cannot move into itself", what, storage.ErrInvalidName)
	}
	if err := b.ensureDir(dstDir); err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(dstKey, err))
	}
	err := unix.Renameat2(unix.AT_FDCWD, src, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) {
		err = os.Rename(src, dst) // filesystem without RENAME_NOREPLACE; checked above
	}
	if errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("%s: %w", what, storage.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(dstKey, err))
	}
	if err := atomicfile.SyncDir(filepath.Dir(dst)); err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(dstKey, err))
	}
	if err := atomicfile.SyncDir(filepath.Dir(src)); err != nil {
		return fmt.Errorf("%s: %w", what, b.cause(srcKey, err))
	}
	return nil
}
