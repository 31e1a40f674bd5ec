package s3

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/minio/minio-go/v7"

	"github.com/veil-project/veil/internal/storage"
)

// keys calls fn for every key below path ("" for everything), recursively or not.
// list lists objects under a context of its own; stop (deferred by the caller) ends the
// listing wherever the caller left it. minio's lister goroutine ends only once its context
// is cancelled and its last send is taken, so stop cancels, then drains.
func (b *Backend) list(ctx context.Context, o minio.ListObjectsOptions) (ch <-chan minio.ObjectInfo, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	in := b.c.ListObjects(ctx, b.bucket, o)
	return in, func() {
		cancel()
		for range in {
		}
	}
}

func (b *Backend) keys(ctx context.Context, path string, recursive bool, fn func(minio.ObjectInfo) error) error {
	prefix := b.prefix
	if path != "" {
		prefix = b.marker(path)
	}
	ch, stop := b.list(ctx, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive})
	defer stop()
	for oi := range ch {
		if oi.Err != nil {
			return oi.Err
		}
		if err := fn(oi); err != nil {
			return err
		}
	}
	return nil
}

// List returns the entries directly in dir, sorted by name.
func (b *Backend) List(ctx context.Context, dir string) ([]storage.Info, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if dir != "" {
		if _, ok, err := b.file(ctx, dir); err != nil {
			return nil, fmt.Errorf("list %q: %w", dir, err)
		} else if ok {
			return nil, fmt.Errorf("list %q: %w", dir, storage.ErrNotDir)
		}
	}
	base := b.prefix
	if dir != "" {
		base = b.marker(dir)
	}
	out := []storage.Info{}
	seen := false
	err := b.keys(ctx, dir, false, func(oi minio.ObjectInfo) error {
		seen = true
		rest := strings.TrimPrefix(oi.Key, base)
		switch {
		case rest == "":
			// dir's own marker
		case strings.HasSuffix(rest, "/"):
			out = append(out, storage.Info{Dir: dir, Name: strings.TrimSuffix(rest, "/"), IsDir: true})
		default:
			out = append(out, storage.Info{Dir: dir, Name: rest, Size: oi.Size, ModTime: oi.LastModified})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", dir, err)
	}
	if dir != "" && !seen {
		return nil, fmt.Errorf("list %q: %w", dir, storage.ErrNotFound)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes a file, or an empty directory's marker.
func (b *Backend) Delete(ctx context.Context, dir, name string) error {
	if err := checkPath(dir, name); err != nil {
		return err
	}
	p := storage.Join(dir, name)
	if _, ok, err := b.file(ctx, p); err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	} else if ok {
		if err := b.c.RemoveObject(ctx, b.bucket, b.key(p), minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("delete %s: %w", p, err)
		}
		return nil
	}
	var found, children bool
	err := b.keys(ctx, p, true, func(oi minio.ObjectInfo) error {
		found = true
		if oi.Key != b.marker(p) {
			children = true
		}
		return nil
	})
	switch {
	case err != nil:
		return fmt.Errorf("delete %s: %w", p, err)
	case !found:
		return fmt.Errorf("delete %s: %w", p, storage.ErrNotFound)
	case children:
		return fmt.Errorf("delete %s: %w", p, storage.ErrNotEmpty)
	}
	b.dirs.Delete(p)
	if err := b.c.RemoveObject(ctx, b.bucket, b.marker(p), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return nil
}

// Search lists every file or directory named name in dir or below, sorted by path.
func (b *Backend) Search(ctx context.Context, dir, name string) ([]storage.Info, error) {
	if err := checkPath(dir, name); err != nil {
		return nil, err
	}
	var out []storage.Info
	dirs := map[string]bool{}
	err := b.keys(ctx, dir, true, func(oi minio.ObjectInfo) error {
		rel := strings.TrimPrefix(oi.Key, b.prefix)
		isMarker := strings.HasSuffix(rel, "/")
		rel = strings.TrimSuffix(rel, "/")
		parts := strings.Split(rel, "/")
		last := len(parts)
		if !isMarker {
			last--
			if parts[last] == name {
				d, n := storage.Split(rel)
				out = append(out, storage.Info{Dir: d, Name: n, Size: oi.Size, ModTime: oi.LastModified})
			}
		}
		for i := range last {
			p := strings.Join(parts[:i+1], "/")
			if parts[i] == name && len(p) > len(dir) && !dirs[p] {
				dirs[p] = true
				d, n := storage.Split(p)
				out = append(out, storage.Info{Dir: d, Name: n, IsDir: true})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path() < out[j].Path() })
	return out, nil
}

// Create writes the markers of dir and its parents.
func (b *Backend) Create(ctx context.Context, dir string) error {
	if err := checkDir(dir); err != nil {
		return err
	}
	if err := b.ensureDirs(ctx, dir); err != nil {
		return fmt.Errorf("create %q: %w", dir, err)
	}
	return nil
}

// Move copies then deletes (see the package comment for what an interruption leaves).
func (b *Backend) Move(ctx context.Context, srcDir, srcName, dstDir, dstName string) error {
	if err := checkPath(srcDir, srcName); err != nil {
		return err
	}
	if err := checkPath(dstDir, dstName); err != nil {
		return err
	}
	src, dst := storage.Join(srcDir, srcName), storage.Join(dstDir, dstName)
	what := fmt.Sprintf("move %s to %s", src, dst)
	if _, err := b.Stat(ctx, dstDir, dstName); err == nil {
		return fmt.Errorf("%s: %w", what, storage.ErrExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		// A failed check is not an absent destination: copying now could replace it.
		return fmt.Errorf("%s: checking the destination: %w", what, err)
	}
	info, err := b.Stat(ctx, srcDir, srcName)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if info.IsDir && strings.HasPrefix(dst+"/", src+"/") {
		return fmt.Errorf("%s: %w: a directory cannot move into itself", what, storage.ErrInvalidName)
	}
	if err := b.ensureDirs(ctx, dstDir); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !info.IsDir {
		if err := b.copy(ctx, b.key(src), b.key(dst), info.Size); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := b.c.RemoveObject(ctx, b.bucket, b.key(src), minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	var objs []minio.ObjectInfo
	if err := b.keys(ctx, src, true, func(oi minio.ObjectInfo) error { objs = append(objs, oi); return nil }); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// Markers first (the destination exists as a directory from the start), then files.
	sort.SliceStable(objs, func(i, j int) bool {
		return strings.HasSuffix(objs[i].Key, "/") && !strings.HasSuffix(objs[j].Key, "/")
	})
	if err := b.ensureDirs(ctx, dst); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, oi := range objs {
		rel := strings.TrimPrefix(oi.Key, b.marker(src))
		if rel == "" {
			continue // src's own marker; dst's was written above
		}
		if strings.HasSuffix(rel, "/") {
			if err := b.ensureDirs(ctx, dst+"/"+strings.TrimSuffix(rel, "/")); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			continue
		}
		if err := b.copy(ctx, oi.Key, b.marker(dst)+rel, oi.Size); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	for _, oi := range objs {
		if err := b.c.RemoveObject(ctx, b.bucket, oi.Key, minio.RemoveObjectOptions{}); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	b.dirs.Range(func(k, _ any) bool {
		if p := k.(string); p == src || strings.HasPrefix(p, src+"/") {
			b.dirs.Delete(k)
		}
		return true
	})
	b.c.RemoveObject(ctx, b.bucket, b.marker(src), minio.RemoveObjectOptions{})
	return nil
}

// copy is a server-side copy (multipart copy above 5 GiB).
func (b *Backend) copy(ctx context.Context, from, to string, size int64) error {
	dst := minio.CopyDestOptions{Bucket: b.bucket, Object: to}
	src := minio.CopySrcOptions{Bucket: b.bucket, Object: from}
	var err error
	if size > 5<<30 {
		_, err = b.c.ComposeObject(ctx, dst, src)
	} else {
		_, err = b.c.CopyObject(ctx, dst, src)
	}
	return err
}
