package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

var (
	_ storage.MatchBatcher = (*Backend)(nil)
	_ storage.LargeBatcher = (*Backend)(nil)
)

// BatchCreates, BatchAbsents and BatchMatches mark PutBatch as honouring Object.Create,
// Object.Absent and Object.Match; BatchLarge as taking one object past
// storage.BatchMaxObjectSize per batch.
func (b *Backend) BatchCreates() {}
func (b *Backend) BatchAbsents() {}
func (b *Backend) BatchMatches() {}
func (b *Backend) BatchLarge()   {}

// PutBatch writes every object's content to a temporary file first, then, under the
// commit lock, checks the whole batch (its conditions against what is stored before it,
// a name that is a directory, a parent that is a file) and renames the objects into place
// in order. A refused batch stores nothing. The batch is atomic against every other
// writer of the directory (they commit under the same lock), not against a reader that
// takes no lock, nor a crash: either may see the first objects of the batch only, in
// batch order with the created ones last, as with one Put each. A created object
// (Object.Create) is linked into place, which fails on an existing name even on a
// filesystem whose flock excludes nothing (doc.go); only there can a create be refused
// after the batch's other objects were stored.
func (b *Backend) PutBatch(ctx context.Context, objs []storage.Object) error {
	if err := storage.CheckBatch(objs, true); err != nil {
		return err
	}
	paths := make([]string, len(objs))
	for i, o := range objs {
		p, err := b.path(o.Dir, o.Name)
		if err != nil {
			return err
		}
		paths[i] = p
	}
	tmps := make([]string, len(objs))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	for i, o := range objs {
		if o.Absent {
			continue
		}
		f, err := b.createTemp()
		if err != nil {
			return b.fail("put", storage.Join(o.Dir, o.Name), err)
		}
		tmps[i] = f.Name()
		_, err = f.Write(o.Data)
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return b.fail("put", storage.Join(o.Dir, o.Name), err)
		}
		defer f.Close() // its flock keeps New from taking it until it is renamed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := b.lock(ctx)
	if err != nil {
		return fmt.Errorf("put batch of %d: %w", len(objs), b.cause("", err))
	}
	defer unlock()
	for i, o := range objs {
		if err := b.checkObject(o, paths[i]); err != nil {
			return fmt.Errorf("batch object %d (%s): %w", i, storage.Join(o.Dir, o.Name), err)
		}
	}
	if err := shapeOK(objs); err != nil {
		return err
	}
	for _, o := range objs {
		if err := b.ensureDir(o.Dir); err != nil {
			return b.fail("put", storage.Join(o.Dir, o.Name), err)
		}
	}
	return b.commit(objs, paths, tmps)
}

// commit moves the batch's temporary files into place in batch order, the created objects
// last (a root created with the records it lists is never there before them, for a reader
// or after a crash); tmps[i] is cleared once object i is stored.
func (b *Backend) commit(objs []storage.Object, paths, tmps []string) error {
	dirs := map[string]bool{}
	for i, o := range objs {
		if o.Absent || o.Create {
			continue
		}
		if err := os.Rename(tmps[i], paths[i]); err != nil {
			return b.fail("put", storage.Join(o.Dir, o.Name), err)
		}
		tmps[i] = ""
		dirs[filepath.Dir(paths[i])] = true
	}
	var linked []string
	for i, o := range objs {
		if !o.Create {
			continue
		}
		moved, err := createAt(tmps[i], paths[i])
		if err != nil {
			for _, p := range linked { // only where the flock excludes nothing (doc.go)
				os.Remove(p)
			}
			if errors.Is(err, fs.ErrExist) {
				err = storage.ErrExists
			}
			return b.fail("put", storage.Join(o.Dir, o.Name), err)
		}
		if moved {
			tmps[i] = ""
		}
		linked = append(linked, paths[i])
		dirs[filepath.Dir(paths[i])] = true
	}
	for d := range dirs {
		if err := atomicfile.SyncDir(d); err != nil {
			return fmt.Errorf("put batch of %d: %w", len(objs), b.cause("", err))
		}
	}
	return nil
}

// checkObject checks object o, stored at p, against what is stored now.
func (b *Backend) checkObject(o storage.Object, p string) error {
	fi, err := os.Lstat(p)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return b.cause(storage.Join(o.Dir, o.Name), err)
	}
	switch {
	case o.Match != nil:
		same, err := hashIs(p, *o.Match)
		if err != nil && exists {
			return b.cause(storage.Join(o.Dir, o.Name), err)
		}
		if !same {
			return storage.ErrChanged
		}
	case (o.Create || o.Absent) && exists:
		return storage.ErrExists
	case exists && fi.IsDir():
		return storage.ErrIsDir
	}
	if o.Absent {
		return nil // a name below a file is absent too
	}
	return b.parentsOK(o.Dir)
}

// parentsOK reports ErrNotDir when a file stands where dir or one of its parents would be.
func (b *Backend) parentsOK(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Lstat(filepath.Join(b.root, filepath.FromSlash(dir)))
	switch {
	case err == nil && !fi.IsDir(), errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%w: a file is in the way of %s", storage.ErrNotDir, dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return b.cause(dir, err)
	}
	return nil
}

// shapeOK refuses a batch that stores an object where another of its objects needs a
// directory (ErrNotDir), checked before anything is written.
func shapeOK(objs []storage.Object) error {
	files := map[string]bool{}
	for _, o := range objs {
		if !o.Absent {
			files[storage.Join(o.Dir, o.Name)] = true
		}
	}
	for _, o := range objs {
		if o.Absent {
			continue
		}
		for d := o.Dir; d != ""; d, _ = storage.Split(d) {
			if files[d] {
				return fmt.Errorf("batch object %s: %w: the batch stores a file at %s", storage.Join(o.Dir, o.Name), storage.ErrNotDir, d)
			}
		}
	}
	return nil
}

// createAt puts the temporary file tmp at p, which must not exist (atomicfile.PlaceNew),
// or on a file system with neither hard links nor RENAME_NOREPLACE by a plain rename: p
// was checked absent under the commit lock. moved reports that tmp is gone (renamed).
func createAt(tmp, p string) (moved bool, err error) {
	moved, err = atomicfile.PlaceNew(tmp, p)
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSYS) {
		if err = os.Rename(tmp, p); err == nil {
			moved = true
		}
	}
	return moved, err
}
