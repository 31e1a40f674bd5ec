package testutil

import (
	"context"
	"syscall"
	"testing"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountWithoutHardLinks mounts at mnt a read-write view of the folder backing that
// refuses hard links (link(2) fails with EPERM), as vfat and exFAT (USB disks, SD cards)
// and many network or FUSE file systems do; everything else passes through. It is
// unmounted when the test ends. Without FUSE the test is skipped (failed under
// VEIL_REQUIRE_INTEGRATION=1).
func MountWithoutHardLinks(t testing.TB, backing, mnt string) {
	t.Helper()
	fuseMountPoint(t, mnt)
	root, err := gofs.NewLoopbackRoot(backing)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gofs.Mount(mnt, &noLinkNode{root.(*gofs.LoopbackNode)}, &gofs.Options{
		MountOptions: fuse.MountOptions{FsName: "nolinks", Name: "nolinks"}})
	if err != nil {
		t.Fatalf("mount a view without hard links at %s: %v", mnt, err)
	}
	t.Cleanup(func() { srv.Unmount() })
}

// noLinkNode is a loopback node whose link(2) is refused, and so are its children's.
type noLinkNode struct{ *gofs.LoopbackNode }

func (*noLinkNode) Link(context.Context, gofs.InodeEmbedder, string, *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return nil, syscall.EPERM
}

func (*noLinkNode) WrapChild(_ context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &noLinkNode{ops.(*gofs.LoopbackNode)}
}
