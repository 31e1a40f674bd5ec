package fusefs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/veil-project/veil/internal/fuseunmount"
	"github.com/veil-project/veil/internal/oblivisync"
)

// Config describes one mount.
type Config struct {
	Backend    string
	Mountpoint string
	Passphrase []byte
	ReadOnly   bool
	// Writer configures read-write mounts; read-only mounts use only its StateDir, to
	// remember the newest epoch they showed (a rolled-back backend is then refused).
	Writer oblivisync.Options
	// DrainTimeout bounds how long unmounting keeps syncing (at the drip rate) to empty
	// the buffer; what remains stays in the journal. Default 1 minute.
	DrainTimeout time.Duration
	// CacheTimeout is the kernel's attribute/entry cache time; default 1s read-write,
	// 100ms read-only (readers must notice new epochs).
	CacheTimeout time.Duration
	Logger       *slog.Logger
	OnEpoch      func(oblivisync.EpochReport)
	Ready        func() // called once the mount is live
	// Draining, if set, is called once a read-write mount is unmounted with changes still
	// pending, before it syncs them (at the drip pace, up to DrainTimeout): the caller
	// says why the process has not exited yet.
	Draining func(oblivisync.Stats)
	Debug    bool
	// MetricsAddr, if set, serves /healthz and /metrics (prometheus) there; use loopback.
	MetricsAddr string
}

// Run mounts the backend and serves it until ctx is done or the mount is unmounted
// externally (fusermount3 -u). A read-write mount syncs one epoch per drip time; on the
// way out it unmounts first (no new writes), then drains the buffer at the same pace.
func Run(ctx context.Context, c Config) error {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = time.Minute
	}
	if err := oblivisync.CheckOutside(c.Backend, c.Mountpoint, "mountpoint"); err != nil {
		return err
	}
	if err := prepareMountpoint(c.Mountpoint, c.Logger); err != nil {
		return err
	}
	var f oblivisync.FS
	var w *oblivisync.Writer
	if c.ReadOnly {
		r, err := oblivisync.OpenReaderWith(c.Backend, c.Passphrase,
			oblivisync.ReaderOptions{Remember: true, StateDir: c.Writer.StateDir, StateRoot: c.Writer.StateRoot})
		if err != nil {
			return err
		}
		f = r
		if c.CacheTimeout <= 0 {
			c.CacheTimeout = 100 * time.Millisecond
		}
	} else {
		c.Writer.Logger = c.Logger
		var err error
		if w, err = oblivisync.OpenWriter(c.Backend, c.Passphrase, c.Writer); err != nil {
			return err
		}
		defer w.Close()
		f = w
		if c.CacheTimeout <= 0 {
			c.CacheTimeout = time.Second
		}
	}
	opts := &fuse.MountOptions{FsName: "veil-osync", Name: "osync", MaxWrite: 1 << 20,
		DisableXAttrs: true, Debug: c.Debug, Options: []string{"default_permissions"}}
	if c.ReadOnly {
		opts.Options = append(opts.Options, "ro")
	}
	srv, err := fuse.NewServer(newRaw(f, c.CacheTimeout, c.Logger), c.Mountpoint, opts)
	if err != nil {
		return fmt.Errorf("mount %s: %w", c.Mountpoint, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		return fmt.Errorf("mount %s: %w", c.Mountpoint, err)
	}
	c.Logger.Info("mounted", "mountpoint", c.Mountpoint, "read_only", c.ReadOnly)
	if c.Ready != nil {
		c.Ready()
	}
	var mx *metrics
	if c.MetricsAddr != "" {
		if mx, err = startMetrics(c.MetricsAddr, c.Logger); err != nil {
			srv.Unmount()
			return fmt.Errorf("metrics: %w", err)
		}
		defer mx.stop()
	}
	onEpoch := func(r oblivisync.EpochReport) {
		mx.observe(r)
		c.Logger.Info("epoch", "epoch", r.Epoch, "synced_bytes", r.BytesSynced, "committed", r.Committed,
			"pending_bytes", r.PendingBytes, "pending_inodes", r.PendingInodes, "duration", r.Duration)
		if c.OnEpoch != nil {
			c.OnEpoch(r)
		}
	}
	served := make(chan struct{})
	go func() { srv.Wait(); close(served) }()
	loopErr := make(chan error, 1)
	loopCtx, stopLoop := context.WithCancel(context.Background())
	defer stopLoop()
	if w != nil {
		go func() { loopErr <- w.Run(loopCtx, onEpoch) }()
	}
	var runErr error
	select {
	case <-ctx.Done():
	case <-served:
	case runErr = <-loopErr:
	}
	fuseunmount.Unmount(srv, c.Mountpoint, served, c.Logger)
	stopLoop()
	if w == nil || runErr != nil {
		return runErr
	}
	if st := w.Stats(); st.PendingInodes > 0 && c.Draining != nil {
		c.Draining(st)
	}
	dctx, cancel := context.WithTimeout(context.Background(), c.DrainTimeout)
	defer cancel()
	if err := w.Drain(dctx, onEpoch); err != nil {
		return fmt.Errorf("unmounted %s, but %w", c.Mountpoint, err)
	}
	c.Logger.Info("unmounted; buffer drained", "mountpoint", c.Mountpoint)
	return nil
}
