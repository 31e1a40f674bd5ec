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
	Logger     *slog.Logger        // default: discard
	Ready      func(snapshots int) // called once the file system is mounted, with the number of snapshots
	// ReadTimeout bounds each request of the kernel (a read, a lookup, a listing): past
	// it, the request fails with EIO, as from a service that stopped answering. Default
	// DefaultReadTimeout.
	ReadTimeout time.Duration
	// Loaded bounds the snapshots whose listing (tree root) the mount holds besides
	// current/'s: a snapshot's is loaded when snapshots/<time>/ is browsed, and the least
	// recently used is dropped past the bound (loaded again if browsed again). Default
	// DefaultLoaded.
	Loaded int
	// Refresh is how often current/ checks for a newer root (one request, when a folder
	// under current/ is looked up or listed and the last check is older): it then shows
	// the newest tree, and snapshots/ the new snapshots. Default DefaultRefresh; negative:
	// never (current/ stays the tree the mount started with).
	Refresh time.Duration

	gotFollower func(*follower)        // tests: current/'s follower, once mounted
	viewed      func(dir, name string) // tests: called by each lookup once it has its view
}

// DefaultRefresh is Config.Refresh's default: a put shows in current/ within about 10 s,
// and an idle mount costs nothing (a busy one a request per 10 s).
const DefaultRefresh = 10 * time.Second

// MinRefresh is the shortest Config.Refresh 'veil mount --refresh' accepts (0 there is
// never): below it the kernel asks about every cached name that often.
const MinRefresh = time.Second

// DefaultLoaded is Config.Loaded's default: a listing holds about 280 bytes a file, so 4
// snapshots of 100,000 files are about 110 MB.
const DefaultLoaded = 4

// DefaultReadTimeout is Config.ReadTimeout's default: a read needs at most two chunks
// (8 MiB each at most), which a link of 200 kB/s brings in this time.
const DefaultReadTimeout = 90 * time.Second

// MinReadTimeout is the shortest Config.ReadTimeout 'veil mount --read-timeout' accepts:
// below it a read that needs a chunk fails on an ordinary link.
const MinReadTimeout = time.Second

// staticDir is a directory whose children are fixed when the mount starts.
type staticDir struct {
	gofs.Inode
	build func(ctx context.Context, d *staticDir)
}

var _ gofs.NodeOnAdder = (*staticDir)(nil)

func (d *staticDir) OnAdd(ctx context.Context) { d.build(ctx, d) }

// Run mounts the snapshots that exist now (current/ and snapshots/<time>/), read-only, and
// serves until ctx ends or the file system is unmounted (fusermount3 -u). It reads the
// newest tree root only: snapshots/ is listed from the other roots when first browsed, and
// a snapshot's listing is loaded when its folder is (dupless.Catalog). current/ follows
// the roots published since (Config.Refresh, follow.go).
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.Loaded <= 0 {
		cfg.Loaded = DefaultLoaded
	}
	cat, err := cfg.Client.OpenCatalog(ctx, cfg.Loaded)
	if err != nil {
		return err
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	life, end := context.WithCancel(context.Background())
	defer end()
	env := &env{cat: cat, log: log, timeout: cfg.ReadTimeout, follow: newFollower(cfg.Refresh), life: life, viewed: cfg.viewed}
	root := &staticDir{build: func(ctx context.Context, d *staticDir) {
		cur := d.NewPersistentInode(ctx, &treeDir{follows: true, env: env}, gofs.StableAttr{Mode: syscall.S_IFDIR})
		env.follow.top = cur
		d.AddChild("current", cur, false)
		d.AddChild("snapshots", d.NewPersistentInode(ctx, &snapsDir{env: env}, gofs.StableAttr{Mode: syscall.S_IFDIR}), false)
	}}
	long := time.Hour // a snapshot never changes (current/'s entries: Config.Refresh)
	srv, err := gofs.Mount(cfg.Mountpoint, root, &gofs.Options{
		EntryTimeout: &long, AttrTimeout: &long, NegativeTimeout: &long,
		MountOptions: fuse.MountOptions{Name: "veil", FsName: "veil", Options: []string{"ro"}},
	})
	if err != nil {
		return fmt.Errorf("mount %s: %w", cfg.Mountpoint, err)
	}
	if cfg.gotFollower != nil {
		cfg.gotFollower(env.follow)
	}
	if cfg.Ready != nil {
		cfg.Ready(cat.Count())
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
