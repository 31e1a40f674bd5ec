package oblivisync

// Attr are an inode's attributes as the FUSE layer reports them.
type Attr struct {
	Ino                 uint64
	Mode                uint32 // type bits | permissions
	Uid, Gid            uint32
	Size                uint64
	Atime, Mtime, Ctime int64 // unix nanoseconds
	Nlink               uint32
}

// DirEntry is one directory entry.
type DirEntry struct {
	Name string
	Ino  uint64
	Mode uint32
}

// SetAttr lists the attribute changes of a setattr call; nil fields are left alone.
type SetAttr struct {
	Mode         *uint32 // permission bits only
	Uid, Gid     *uint32
	Size         *uint64
	Atime, Mtime *int64
}

// StatFS are filesystem-wide numbers for statfs(2).
type StatFS struct {
	Capacity uint64 // payload bytes the backend can hold
	Used     uint64 // bytes occupied by live fragments (committed or written)
	Pending  uint64 // bytes waiting in the buffer
	Inodes   uint64
}

// FS is what the FUSE layer serves; both the read-write Writer and the read-only Reader
// implement it (the Reader returns ErrReadOnly from every mutating method).
type FS interface {
	GetAttr(ino uint64) (Attr, error)
	Lookup(parent uint64, name string) (Attr, error)
	ReadDir(ino uint64) ([]DirEntry, error)
	Readlink(ino uint64) (string, error)
	Read(ino uint64, off int64, buf []byte) (int, error)
	StatFS() StatFS

	Mkdir(parent uint64, name string, mode, uid, gid uint32) (Attr, error)
	Create(parent uint64, name string, mode, uid, gid uint32) (Attr, error)
	Symlink(parent uint64, name, target string, uid, gid uint32) (Attr, error)
	Unlink(parent uint64, name string) error
	Rmdir(parent uint64, name string) error
	Rename(parent uint64, name string, newParent uint64, newName string, noReplace bool) error
	SetAttr(ino uint64, s SetAttr) (Attr, error)
	Write(ino uint64, off int64, data []byte) (int, error)
	Flush() error
}

var (
	_ FS = (*Writer)(nil)
	_ FS = (*Reader)(nil)
)
