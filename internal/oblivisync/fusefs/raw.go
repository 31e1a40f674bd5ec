package fusefs

import (
	"errors"
	"github.com/veil-project/veil/internal/ratelog"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/veil-project/veil/internal/oblivisync"
)

// rawFS adapts oblivisync.FS to go-fuse's RawFileSystem.
type rawFS struct {
	fuse.RawFileSystem
	fs      oblivisync.FS
	timeout time.Duration
	log     *slog.Logger

	mu     sync.Mutex
	dirs   map[uint64][]oblivisync.DirEntry
	nextFh uint64
	// noSpaces spaces out the log lines of refused writes (ratelog.DefaultEvery): a copy
	// meeting a full buffer fails thousands of writes.
	noSpaces ratelog.Spacer
}

// noSpace says on the mount's log why writes fail with ENOSPC: the disk is not full, the
// pending buffer is (--max-pending), and the application sees only "No space left on
// device" (found by a user walkthrough).
func (r *rawFS) noSpace(op string, err error) {
	if ok, held := r.noSpaces.Due(); ok {
		r.log.Warn("writes refused with ENOSPC until epochs sync what is pending (raise --max-pending to buffer more)", "op", op, "err", err, "unlogged_before", held)
	}
}

func newRaw(f oblivisync.FS, timeout time.Duration, log *slog.Logger) *rawFS {
	return &rawFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), fs: f, timeout: timeout, log: log,
		dirs: map[uint64][]oblivisync.DirEntry{}}
}

// errno maps engine errors to FUSE status codes; unexpected ones are logged as EIO.
func (r *rawFS) errno(op string, err error) fuse.Status {
	switch {
	case err == nil:
		return fuse.OK
	case errors.Is(err, oblivisync.ErrNotExist):
		return fuse.ENOENT
	case errors.Is(err, oblivisync.ErrExist):
		return fuse.Status(syscall.EEXIST)
	case errors.Is(err, oblivisync.ErrNotDir):
		return fuse.ENOTDIR
	case errors.Is(err, oblivisync.ErrIsDir):
		return fuse.EISDIR
	case errors.Is(err, oblivisync.ErrNotEmpty):
		return fuse.Status(syscall.ENOTEMPTY)
	case errors.Is(err, oblivisync.ErrInvalid):
		return fuse.EINVAL
	case errors.Is(err, oblivisync.ErrReadOnly):
		return fuse.EROFS
	case errors.Is(err, oblivisync.ErrNoSpace):
		r.noSpace(op, err)
		return fuse.Status(syscall.ENOSPC)
	case errors.Is(err, oblivisync.ErrFileTooBig):
		return fuse.Status(syscall.EFBIG)
	case errors.Is(err, oblivisync.ErrStale):
		return fuse.Status(syscall.ESTALE)
	}
	r.log.Error("fuse operation failed", "op", op, "err", err)
	return fuse.EIO
}

func fillAttr(a oblivisync.Attr, out *fuse.Attr) {
	out.Ino = a.Ino
	out.Size = a.Size
	out.Blocks = (a.Size + 511) / 512
	out.Blksize = 4096
	out.Mode = a.Mode
	out.Nlink = a.Nlink
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Atime, out.Atimensec = uint64(a.Atime/1e9), uint32(a.Atime%1e9)
	out.Mtime, out.Mtimensec = uint64(a.Mtime/1e9), uint32(a.Mtime%1e9)
	out.Ctime, out.Ctimensec = uint64(a.Ctime/1e9), uint32(a.Ctime%1e9)
}

func (r *rawFS) entry(a oblivisync.Attr, out *fuse.EntryOut) {
	out.NodeId = a.Ino
	out.Generation = 1
	out.SetEntryTimeout(r.timeout)
	out.SetAttrTimeout(r.timeout)
	fillAttr(a, &out.Attr)
}

func (r *rawFS) String() string { return "veil-osync" }

func (r *rawFS) Lookup(_ <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	a, err := r.fs.Lookup(h.NodeId, name)
	if err != nil {
		return r.errno("lookup", err)
	}
	r.entry(a, out)
	return fuse.OK
}

func (r *rawFS) GetAttr(_ <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	a, err := r.fs.GetAttr(in.NodeId)
	if err != nil {
		return r.errno("getattr", err)
	}
	out.SetTimeout(r.timeout)
	fillAttr(a, &out.Attr)
	return fuse.OK
}

func (r *rawFS) SetAttr(_ <-chan struct{}, in *fuse.SetAttrIn, out *fuse.AttrOut) fuse.Status {
	var s oblivisync.SetAttr
	if m, ok := in.GetMode(); ok {
		s.Mode = &m
	}
	if u, ok := in.GetUID(); ok {
		s.Uid = &u
	}
	if g, ok := in.GetGID(); ok {
		s.Gid = &g
	}
	if sz, ok := in.GetSize(); ok {
		s.Size = &sz
	}
	if t, ok := in.GetATime(); ok {
		ns := t.UnixNano()
		s.Atime = &ns
	}
	if t, ok := in.GetMTime(); ok {
		ns := t.UnixNano()
		s.Mtime = &ns
	}
	a, err := r.fs.SetAttr(in.NodeId, s)
	if err != nil {
		return r.errno("setattr", err)
	}
	out.SetTimeout(r.timeout)
	fillAttr(a, &out.Attr)
	return fuse.OK
}

func (r *rawFS) Mkdir(_ <-chan struct{}, in *fuse.MkdirIn, name string, out *fuse.EntryOut) fuse.Status {
	a, err := r.fs.Mkdir(in.NodeId, name, in.Mode, in.Uid, in.Gid)
	if err != nil {
		return r.errno("mkdir", err)
	}
	r.entry(a, out)
	return fuse.OK
}

func (r *rawFS) Create(_ <-chan struct{}, in *fuse.CreateIn, name string, out *fuse.CreateOut) fuse.Status {
	a, err := r.fs.Create(in.NodeId, name, in.Mode, in.Uid, in.Gid)
	if err != nil {
		return r.errno("create", err)
	}
	r.entry(a, &out.EntryOut)
	r.hold(a.Ino)
	return fuse.OK
}

// holder is implemented by the read-write client: it keeps the content of an open file
// whose last name goes away until the last release (POSIX unlink-while-open).
type holder interface {
	Hold(ino uint64)
	Release(ino uint64)
}

func (r *rawFS) hold(ino uint64) {
	if h, ok := r.fs.(holder); ok {
		h.Hold(ino)
	}
}

func (r *rawFS) Symlink(_ <-chan struct{}, h *fuse.InHeader, target, name string, out *fuse.EntryOut) fuse.Status {
	a, err := r.fs.Symlink(h.NodeId, name, target, h.Uid, h.Gid)
	if err != nil {
		return r.errno("symlink", err)
	}
	r.entry(a, out)
	return fuse.OK
}

func (r *rawFS) Readlink(_ <-chan struct{}, h *fuse.InHeader) ([]byte, fuse.Status) {
	t, err := r.fs.Readlink(h.NodeId)
	if err != nil {
		return nil, r.errno("readlink", err)
	}
	return []byte(t), fuse.OK
}

func (r *rawFS) Unlink(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return r.errno("unlink", r.fs.Unlink(h.NodeId, name))
}

func (r *rawFS) Rmdir(_ <-chan struct{}, h *fuse.InHeader, name string) fuse.Status {
	return r.errno("rmdir", r.fs.Rmdir(h.NodeId, name))
}

const renameNoReplace, renameExchange = 1, 2

func (r *rawFS) Rename(_ <-chan struct{}, in *fuse.RenameIn, oldName, newName string) fuse.Status {
	if in.Flags&renameExchange != 0 {
		return fuse.EINVAL
	}
	return r.errno("rename", r.fs.Rename(in.NodeId, oldName, in.Newdir, newName, in.Flags&renameNoReplace != 0))
}

// pinner is implemented by the read-only client: each open handle reads the version of
// the file it opened (oblivisync/reader_pin.go).
type pinner interface {
	Open(ino uint64) (uint64, oblivisync.Attr, error)
	Release(fh uint64)
	ReadHandle(fh uint64, off int64, buf []byte) (int, error)
}

func (r *rawFS) Open(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if p, ok := r.fs.(pinner); ok {
		fh, _, err := p.Open(in.NodeId)
		if err != nil {
			// ESTALE makes the kernel look the name up again (LOOKUP_REVAL) and retry.
			return r.errno("open", err)
		}
		// No page cache: two handles of one inode may hold different versions, and the
		// kernel would otherwise serve one's cached pages to the other.
		out.Fh, out.OpenFlags = fh, out.OpenFlags|fuse.FOPEN_DIRECT_IO
		return fuse.OK
	}
	a, err := r.fs.GetAttr(in.NodeId)
	if err != nil {
		return r.errno("open", err)
	}
	if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return fuse.EISDIR
	}
	if in.Flags&syscall.O_TRUNC != 0 && in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY && a.Size != 0 {
		zero := uint64(0)
		if _, err := r.fs.SetAttr(in.NodeId, oblivisync.SetAttr{Size: &zero}); err != nil {
			return r.errno("open", err)
		}
	}
	r.hold(in.NodeId)
	return fuse.OK
}

func (r *rawFS) Read(_ <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	var n int
	var err error
	if p, ok := r.fs.(pinner); ok {
		n, err = p.ReadHandle(in.Fh, int64(in.Offset), buf[:min(len(buf), int(in.Size))])
	} else {
		n, err = r.fs.Read(in.NodeId, int64(in.Offset), buf[:min(len(buf), int(in.Size))])
	}
	if err != nil {
		return nil, r.errno("read", err)
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

func (r *rawFS) Write(_ <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	n, err := r.fs.Write(in.NodeId, int64(in.Offset), data)
	if err != nil && n == 0 {
		return 0, r.errno("write", err)
	}
	// A write is applied in journal records of up to 256 KiB: when a later one fails (the
	// pending buffer is full) the earlier ones are in the file. That is a short write, as
	// write(2) reports it; an error would tell the program that nothing changed (found by
	// review: TestWritePartlyAppliedIsShortWrite). Its next write gets the error.
	return uint32(n), fuse.OK
}

func (r *rawFS) Flush(_ <-chan struct{}, _ *fuse.FlushIn) fuse.Status {
	return r.errno("flush", r.fs.Flush())
}

func (r *rawFS) Fsync(_ <-chan struct{}, _ *fuse.FsyncIn) fuse.Status {
	return r.errno("fsync", r.fs.Flush())
}

func (r *rawFS) Release(_ <-chan struct{}, in *fuse.ReleaseIn) {
	if p, ok := r.fs.(pinner); ok {
		p.Release(in.Fh)
		return
	}
	if h, ok := r.fs.(holder); ok {
		h.Release(in.NodeId)
	}
}

func (r *rawFS) OpenDir(_ <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	ents, err := r.fs.ReadDir(in.NodeId)
	if err != nil {
		return r.errno("opendir", err)
	}
	r.mu.Lock()
	r.nextFh++
	out.Fh = r.nextFh
	r.dirs[out.Fh] = ents
	r.mu.Unlock()
	return fuse.OK
}

func (r *rawFS) ReadDir(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, false)
}

func (r *rawFS) ReadDirPlus(_ <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	return r.readDir(in, out, true)
}

// readDir lists the snapshot taken at opendir, with "." and ".." first; with plus it also
// returns each entry's attributes (READDIRPLUS).
func (r *rawFS) readDir(in *fuse.ReadIn, out *fuse.DirEntryList, plus bool) fuse.Status {
	r.mu.Lock()
	ents, ok := r.dirs[in.Fh]
	r.mu.Unlock()
	if !ok {
		return fuse.EBADF
	}
	for i := int(in.Offset); i < len(ents)+2; i++ {
		e := fuse.DirEntry{Off: uint64(i + 1), Mode: syscall.S_IFDIR}
		switch i {
		case 0:
			e.Name, e.Ino = ".", in.NodeId
		case 1:
			e.Name = ".."
		default:
			d := ents[i-2]
			e.Name, e.Ino, e.Mode = d.Name, d.Ino, d.Mode
		}
		if !plus {
			if !out.AddDirEntry(e) {
				break
			}
			continue
		}
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			break
		}
		if i >= 2 {
			if a, err := r.fs.GetAttr(e.Ino); err == nil {
				r.entry(a, eo)
			}
		}
	}
	return fuse.OK
}

func (r *rawFS) ReleaseDir(in *fuse.ReleaseIn) {
	r.mu.Lock()
	delete(r.dirs, in.Fh)
	r.mu.Unlock()
}

func (r *rawFS) FsyncDir(_ <-chan struct{}, _ *fuse.FsyncIn) fuse.Status {
	return r.errno("fsyncdir", r.fs.Flush())
}

func (r *rawFS) StatFs(_ <-chan struct{}, _ *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	st := r.fs.StatFS()
	const bs = 4096
	out.Bsize, out.Frsize, out.NameLen = bs, bs, 255
	out.Blocks = st.Capacity / bs
	free := uint64(0)
	if st.Capacity > st.Used+st.Pending {
		free = st.Capacity - st.Used - st.Pending
	}
	out.Bfree, out.Bavail = free/bs, free/bs
	out.Files = st.Inodes + free/bs
	out.Ffree = free / bs
	return fuse.OK
}
