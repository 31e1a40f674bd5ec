package fusemount

import (
	"context"
	"fmt"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/veil-project/veil/internal/dupless"
)

// snapsDir is snapshots/: a folder per snapshot, named by its time, listed from the tree
// roots when first browsed (dupless.Catalog.Snapshots reads each once and keeps its time),
// and again once current/ followed a newer root.
type snapsDir struct {
	gofs.Inode
	*env
}

var (
	_ gofs.NodeLookuper  = (*snapsDir)(nil)
	_ gofs.NodeReaddirer = (*snapsDir)(nil)
	_ gofs.NodeGetattrer = (*snapsDir)(nil)
)

// SnapshotName is the folder name of a snapshot under snapshots/: its local time to the
// second, with ".<number>" added when an earlier snapshot has the same second.
func SnapshotName(s dupless.Snapshot, taken map[string]bool) string {
	name := s.Time.Local().Format("2006-01-02T15:04:05")
	if taken[name] {
		name = fmt.Sprintf("%s.%d", name, s.Seq)
	}
	taken[name] = true
	return name
}

// names returns the snapshots' folder names, oldest first, and their root numbers; as
// current/, it first checks for newer roots when a check is due.
func (s *snapsDir) names(ctx context.Context) ([]string, map[string]uint64, syscall.Errno) {
	bctx, cancel := s.bound(ctx)
	defer cancel()
	if _, err := s.current(ctx); err != nil {
		return nil, nil, errno(ctx, s.log, "snapshots", err)
	}
	snaps, err := s.cat.Snapshots(bctx)
	if err != nil {
		return nil, nil, errno(ctx, s.log, "snapshots", err)
	}
	names, seqs, taken := make([]string, 0, len(snaps)), make(map[string]uint64, len(snaps)), map[string]bool{}
	for _, sn := range snaps {
		if sn.Damaged != "" { // no time to name it by; 'veil snapshots' and check show it
			s.log.Debug("snapshot not shown: damaged", "snapshot", sn.Seq, "err", sn.Damaged)
			continue
		}
		name := SnapshotName(sn, taken)
		names = append(names, name)
		seqs[name] = sn.Seq
	}
	return names, seqs, 0
}

func (s *snapsDir) Getattr(ctx context.Context, _ gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o555
	return 0
}

func (s *snapsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	_, seqs, errno := s.names(ctx)
	if errno != 0 {
		return nil, errno
	}
	seq, ok := seqs[name]
	if !ok {
		s.follow.timeouts(out) // as current/'s: the kernel then keeps no negative entry
		return nil, syscall.ENOENT
	}
	out.Mode = syscall.S_IFDIR | 0o555
	return s.NewInode(ctx, &treeDir{seq: seq, env: s.env}, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
}

func (s *snapsDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	names, _, errno := s.names(ctx)
	if errno != 0 {
		return nil, errno
	}
	out := make([]fuse.DirEntry, len(names))
	for i, n := range names {
		out[i] = fuse.DirEntry{Name: n, Mode: syscall.S_IFDIR}
	}
	return gofs.NewListDirStream(out), 0
}
