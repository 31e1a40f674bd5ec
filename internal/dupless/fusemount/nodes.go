package fusemount

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync/atomic"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/storage"
)

// treeDir is a directory of one snapshot's tree. It names the snapshot, not its View: a
// listing the Catalog dropped is loaded again when the directory is next used, while the
// kernel may keep the directory's node for an hour. Under current/ it names no snapshot
// but the newest, whichever that is now (follow.go).
type treeDir struct {
	gofs.Inode
	seq     uint64                  // the snapshot's root number (unless follows)
	follows bool                    // under current/
	path    string                  // plain path in the view ("" for its root)
	node    atomic.Pointer[dirNode] // nil for the root; replaced under current/ (setNode)
	*env
}

// env is what every node of a mount shares.
type env struct {
	cat     *dupless.Catalog
	log     *slog.Logger
	timeout time.Duration // Config.ReadTimeout
	follow  *follower
	life    context.Context        // ends when Run returns: what the mount does on its own stops
	viewed  func(dir, name string) // tests: a lookup got its view (Config.viewed)
}

// bound limits a request of the kernel to the mount's timeout: past it the service's
// answer is abandoned and the request fails (EIO), it does not hang the reader.
func (e *env) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.timeout)
}

// file is a stored file (content read on demand, verified per chunk: its record names
// the chunks, its snapshot's listing is not needed).
type file struct {
	gofs.Inode
	node *dupless.Node
	*env
	opens atomic.Int32 // open handles: the last one closed drops node's cached chunk
}

// handle is an open file: no state of its own, but without one the kernel's release never
// reaches the node.
type handle struct{}

// special is a stored FIFO or device.
type special struct {
	gofs.Inode
	node *dupless.Node
}

func (s *special) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(s.node, &out.Attr)
	return 0
}

// link is a stored symlink.
type link struct {
	gofs.Inode
	node *dupless.Node
}

var (
	_ gofs.NodeLookuper   = (*treeDir)(nil)
	_ gofs.NodeReaddirer  = (*treeDir)(nil)
	_ gofs.NodeGetattrer  = (*treeDir)(nil)
	_ gofs.NodeOpener     = (*file)(nil)
	_ gofs.NodeReader     = (*file)(nil)
	_ gofs.NodeReleaser   = (*file)(nil)
	_ gofs.NodeGetattrer  = (*file)(nil)
	_ gofs.NodeReadlinker = (*link)(nil)
	_ gofs.NodeGetattrer  = (*link)(nil)
	_ gofs.NodeGetattrer  = (*special)(nil)
)

// errno maps a dupless error of a kernel request (ctx: the request's own context, not
// the bounded one) to what the kernel gets: absent names are ENOENT; a request the kernel
// interrupted (a signal reached the reader while it waited) is EINTR, which the reader's
// libc or Go runtime retries; anything else (integrity, the service unreachable or past
// Config.ReadTimeout) is EIO, logged. Found by CI: Go's preemption signal reaching a test
// blocked in open(2) made the kernel interrupt the lookup, and the read failed with EIO.
func errno(ctx context.Context, log *slog.Logger, what string, err error) syscall.Errno {
	if errors.Is(err, storage.ErrNotFound) {
		return syscall.ENOENT
	}
	if ctx.Err() != nil {
		return syscall.EINTR
	}
	log.Warn("veil mount: read failed", "path", what, "err", err)
	return syscall.EIO
}

// fileType is the S_IFMT bits of n.
func fileType(n *dupless.Node) uint32 {
	switch {
	case n.IsDir:
		return syscall.S_IFDIR
	case n.Mode&fs.ModeSymlink != 0:
		return syscall.S_IFLNK
	case n.Mode&fs.ModeNamedPipe != 0:
		return syscall.S_IFIFO
	case n.Mode&fs.ModeCharDevice != 0:
		return syscall.S_IFCHR
	case n.Mode&fs.ModeDevice != 0:
		return syscall.S_IFBLK
	}
	return syscall.S_IFREG
}

func fillAttr(n *dupless.Node, out *fuse.Attr) {
	out.Size = uint64(n.Size)
	out.Mode = uint32(n.Mode.Perm())
	out.Mode |= fileType(n)
	out.Rdev = uint32(n.Rdev)
	out.Mode &^= 0o222 // read-only
	out.SetTimes(nil, &n.ModTime, &n.ModTime)
	out.Blocks = (out.Size + 511) / 512
}

func (d *treeDir) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if n := d.getNode(); n != nil {
		fillAttr(n, &out.Attr)
	} else {
		out.Mode = syscall.S_IFDIR | 0o555
	}
	if d.follows && d.follow.every > 0 {
		out.SetTimeout(d.follow.every)
	}
	return 0
}

// view is the directory's snapshot (under current/, the newest; nil: no root yet) and the
// request ctx bounded by Config.ReadTimeout (bound), for the request's reads. Under
// current/ the bound starts once current has waited for a due check: found by review
// (sessions 15 to 17), the wait (up to checkWait) counted against the request's
// ReadTimeout, so with --read-timeout 1s a lookup that found a check due on a slow
// service failed with EIO without having read anything.
func (d *treeDir) view(ctx context.Context) (*dupless.View, context.Context, context.CancelFunc, error) {
	if d.follows {
		v, err := d.current(ctx)
		bctx, cancel := d.bound(ctx)
		return v, bctx, cancel, err
	}
	bctx, cancel := d.bound(ctx)
	v, err := d.cat.View(bctx, d.seq)
	return v, bctx, cancel, err
}

func (d *treeDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	v, bctx, cancel, err := d.view(ctx)
	defer cancel()
	if err != nil {
		return nil, errno(ctx, d.log, d.path, err)
	}
	if v == nil {
		return gofs.NewListDirStream(nil), 0
	}
	es, err := v.Entries(bctx, d.path)
	if err != nil {
		return nil, errno(ctx, d.log, d.path, err)
	}
	out := make([]fuse.DirEntry, 0, len(es))
	for _, e := range es {
		mode := uint32(syscall.S_IFREG)
		if e.IsDir {
			mode = syscall.S_IFDIR
		}
		out = append(out, fuse.DirEntry{Name: e.Name, Mode: mode})
	}
	return gofs.NewListDirStream(out), 0
}

func (f *file) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(f.node, &out.Attr)
	return 0
}

func (f *file) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC|syscall.O_APPEND) != 0 {
		return nil, 0, syscall.EROFS
	}
	f.opens.Add(1)
	return &handle{}, fuse.FOPEN_KEEP_CACHE, 0 // a snapshot's content never changes
}

// Release drops the cached chunk once no handle is open. Found by review: it stayed on the
// node, so reading a tree through the mount kept as much memory as the tree read.
func (f *file) Release(ctx context.Context, _ gofs.FileHandle) syscall.Errno {
	if f.opens.Add(-1) == 0 {
		f.node.DropCache()
	}
	return 0
}

func (f *file) Read(ctx context.Context, _ gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	bctx, cancel := f.bound(ctx)
	defer cancel()
	n, err := f.cat.ReadAt(bctx, f.node, dest, off)
	if err != nil { // the file exists: a chunk the service lost is EIO, never ENOENT (found by review)
		if ctx.Err() != nil {
			return nil, syscall.EINTR // interrupted by the kernel, as in errno
		}
		f.log.Warn("veil mount: read failed", "path", f.node.Name, "err", err)
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (l *link) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillAttr(l.node, &out.Attr)
	return 0
}

func (l *link) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	return []byte(l.node.Target), 0
}
