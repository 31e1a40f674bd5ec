package fusemount

import (
	"context"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/storage"
)

// A lookup under current/ races the checks (follow.go): it reads from the view that was
// current when it began, while a check may make a newer root current and store the newer
// node of a folder whose mode or time changed (invalidate), before the lookup stores the
// node it read. Found by review (left open since session 15): the lookup's older node then
// replaced the newer one for good, and the folder showed its older mode and time until
// its next change (Getattr answers the node held). A folder's node is now replaced only
// by one read from the same root or a newer (setNode), and a lookup answers the node held.
// (The kernel itself drops the attributes of a lookup answered after the invalidation it
// raced; a changed file's entry is invalidated under its folder's lock, so after the
// lookup's answer.)

// dirNode is a folder's node and the number of the root it was read from.
type dirNode struct {
	n   *dupless.Node
	seq uint64
}

// getNode is the folder's node (nil for the root of a snapshot's tree).
func (d *treeDir) getNode() *dupless.Node {
	if h := d.node.Load(); h != nil {
		return h.n
	}
	return nil
}

// setNode makes n, read from root seq, the folder's node unless the node it holds was
// read from a newer root, and returns the node it then holds.
func (d *treeDir) setNode(n *dupless.Node, seq uint64) *dupless.Node {
	for {
		old := d.node.Load()
		if old != nil && old.seq > seq {
			return old.n
		}
		if d.node.CompareAndSwap(old, &dirNode{n: n, seq: seq}) {
			return n
		}
	}
}

func (d *treeDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if d.follows {
		d.follow.timeouts(out) // an absent name too: the kernel then keeps no negative entry
	}
	v, bctx, cancel, err := d.view(ctx)
	defer cancel()
	if err != nil {
		return nil, errno(ctx, d.log, d.path, err)
	}
	if d.viewed != nil {
		d.viewed(d.path, name)
	}
	kid, n, err := d.entry(bctx, v, name)
	if err != nil {
		return nil, errno(ctx, d.log, d.path+"/"+name, err)
	}
	fillAttr(n, &out.Attr)
	if kid != nil {
		return kid, 0 // unchanged: the kernel's node (and cached pages) stays
	}
	return d.NewInode(ctx, d.child(name, n, v.Snap.Seq), gofs.StableAttr{Mode: fileType(n)}), 0
}

// entry reads the entry name of the folder in v (nil: no root yet, nothing there): under
// current/, the node the kernel has for it when that still stands for it (kid), with the
// node to answer; otherwise its node, read.
func (d *treeDir) entry(ctx context.Context, v *dupless.View, name string) (*gofs.Inode, *dupless.Node, error) {
	if v == nil {
		return nil, nil, storage.ErrNotFound
	}
	kid := d.GetChild(name)
	if !d.follows || kid == nil {
		kid = nil
	} else if n := unchanged(kid, v, d.path, name); n != nil {
		return kid, n, nil // read nothing: the kernel looks up again every Config.Refresh
	}
	n, err := v.Lookup(ctx, d.path, name)
	if err != nil {
		return nil, nil, err
	}
	if kid != nil {
		if held := sameEntry(kid, n, v.Snap.Seq); held != nil {
			return kid, held, nil
		}
	}
	return nil, n, nil
}

// child is the node of the folder's entry name, n, read from root seq.
func (d *treeDir) child(name string, n *dupless.Node, seq uint64) gofs.InodeEmbedder {
	switch fileType(n) {
	case syscall.S_IFDIR:
		td := &treeDir{seq: d.seq, follows: d.follows, path: storage.Join(d.path, name), env: d.env}
		td.setNode(n, seq)
		return td
	case syscall.S_IFLNK:
		return &link{node: n}
	case syscall.S_IFREG:
		return &file{node: n, env: d.env}
	}
	return &special{node: n} // a FIFO or device: attributes only (the kernel never asks this file system to open it)
}
