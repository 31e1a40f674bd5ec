package testutil

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountCaseInsensitive mounts at mnt a read-only view of the folder backing that ignores
// case in lookups, as vfat, exFAT, NTFS or macOS's default file system do: a name not
// present exactly is found by a match that ignores case, while listings show the names
// as stored. Change the files in backing; the view shows them at once (nothing cached).
// It is unmounted when the test ends. Without FUSE the test is skipped (failed under
// VEIL_REQUIRE_INTEGRATION=1).
func MountCaseInsensitive(t testing.TB, backing, mnt string) {
	t.Helper()
	fuseMountPoint(t, mnt)
	var zero time.Duration
	srv, err := gofs.Mount(mnt, &foldNode{backing: backing}, &gofs.Options{EntryTimeout: &zero, AttrTimeout: &zero,
		MountOptions: fuse.MountOptions{FsName: "casefold", Name: "casefold"}})
	if err != nil {
		t.Fatalf("mount a case-insensitive view at %s: %v", mnt, err)
	}
	t.Cleanup(func() { srv.Unmount() })
}

// foldNode is a file or folder of the view: backing is its root's folder on disk.
type foldNode struct {
	gofs.Inode
	backing string
}

var (
	_ gofs.NodeLookuper   = (*foldNode)(nil)
	_ gofs.NodeGetattrer  = (*foldNode)(nil)
	_ gofs.NodeReaddirer  = (*foldNode)(nil)
	_ gofs.NodeOpener     = (*foldNode)(nil)
	_ gofs.NodeReadlinker = (*foldNode)(nil)
)

// real is the node's path on disk: each name of its path in the view as stored.
func (n *foldNode) real() string {
	p := n.backing
	for _, name := range strings.Split(n.Path(nil), "/") {
		if name != "" {
			p = filepath.Join(p, foldName(p, name))
		}
	}
	return p
}

// foldName is name as the folder dir stores it: exactly, else the first entry that matches
// it ignoring case, else name.
func foldName(dir, name string) string {
	if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
		return name
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.EqualFold(e.Name(), name) {
			return e.Name()
		}
	}
	return name
}

func (n *foldNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	dir := n.real()
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(dir, foldName(dir, name)), &st); err != nil {
		return nil, gofs.ToErrno(err)
	}
	out.Attr.FromStat(&st)
	return n.NewInode(ctx, &foldNode{backing: n.backing}, gofs.StableAttr{Mode: st.Mode, Ino: st.Ino}), 0
}

func (n *foldNode) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Lstat(n.real(), &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

func (n *foldNode) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return gofs.NewLoopbackDirStream(n.real())
}

func (n *foldNode) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
		return nil, 0, syscall.EROFS
	}
	fd, err := syscall.Open(n.real(), syscall.O_RDONLY, 0)
	if err != nil {
		return nil, 0, gofs.ToErrno(err)
	}
	return gofs.NewLoopbackFile(fd), 0, 0
}

func (n *foldNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	target, err := os.Readlink(n.real())
	if err != nil {
		return nil, gofs.ToErrno(err)
	}
	return []byte(target), 0
}

// fuseMountPoint skips the test without FUSE (fails it under VEIL_REQUIRE_INTEGRATION=1)
// and makes the mount point mnt.
func fuseMountPoint(t testing.TB, mnt string) {
	t.Helper()
	RequireBinary(t, "fusermount3")
	if _, err := os.Stat("/dev/fuse"); err != nil {
		Missing(t, "no /dev/fuse")
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
}
