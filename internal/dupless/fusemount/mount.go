package fusemount

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/fuseunmount"
)

// Config is one mount.
type Config struct {
	Client     *dupless.Client
	Mountpoint string
	Logger     *slog.Logger // default: discard
	Ready      func()       // called once the file system is mounted
	// ReadTimeout bounds each request of the kernel (a read, a lookup, a listing): past
	// it, the request fails with EIO, as from a service that stopped answering. Default
	// DefaultReadTimeout.
	ReadTimeout time.Duration
}

// DefaultReadTimeout is Config.ReadTimeout's default: a read needs at most two chunks
// (8 MiB each at most), which a link of 200 kB/s brings in this time.
const DefaultReadTimeout = 90 * time.Second

// staticDir is a directory whose children are fixed when the mount starts.
type staticDir struct {
	gofs.Inode
	build func(ctx context.Context, d *staticDir)
}

var _ gofs.NodeOnAdder = (*staticDir)(nil)

func (d *staticDir) OnAdd(ctx context.Context) { d.build(ctx, d) }

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

// Run mounts the snapshots that exist now (current/ and snapshots/<time>/), read-only, and
// serves until ctx ends or the file system is unmounted (fusermount3 -u).
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	views, err := cfg.Client.Views(ctx)
	if err != nil {
		return err
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	env := &env{log: log, timeout: cfg.ReadTimeout}
	root := &staticDir{build: func(ctx context.Context, d *staticDir) {
		cur := &staticDir{build: func(context.Context, *staticDir) {}}
		var curNode gofs.InodeEmbedder = cur
		if len(views) > 0 {
			curNode = &treeDir{v: views[len(views)-1], env: env}
		}
		d.AddChild("current", d.NewPersistentInode(ctx, curNode, gofs.StableAttr{Mode: syscall.S_IFDIR}), false)
		snaps := &staticDir{build: func(ctx context.Context, s *staticDir) {
			taken := map[string]bool{}
			for _, v := range views {
				t := &treeDir{v: v, env: env}
				s.AddChild(SnapshotName(v.Snap, taken), s.NewPersistentInode(ctx, t, gofs.StableAttr{Mode: syscall.S_IFDIR}), false)
			}
		}}
		d.AddChild("snapshots", d.NewPersistentInode(ctx, snaps, gofs.StableAttr{Mode: syscall.S_IFDIR}), false)
	}}
	long := time.Hour // content never changes under a mount
	srv, err := gofs.Mount(cfg.Mountpoint, root, &gofs.Options{
		EntryTimeout: &long, AttrTimeout: &long, NegativeTimeout: &long,
		MountOptions: fuse.MountOptions{Name: "veil", FsName: "veil", Options: []string{"ro"}},
	})
	if err != nil {
		return fmt.Errorf("mount %s: %w", cfg.Mountpoint, err)
	}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	served := make(chan struct{})
	go func() { srv.Wait(); close(served) }()
	select {
	case <-ctx.Done():
		// Lazily when busy: a plain unmount failed while a file was open, and Run went
		// on serving (found by review: Ctrl-C did nothing).
		fuseunmount.Unmount(srv, cfg.Mountpoint, served, log)
	case <-served: // unmounted from outside (fusermount3 -u)
	}
	return nil
}
