package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/bench/osync"
	"github.com/veil-project/veil/internal/oblivisync"
	"github.com/veil-project/veil/internal/oblivisync/fusefs"
	"github.com/veil-project/veil/internal/profile"
)

// osyncFlags are shared by the osync subcommands.
type osyncFlags struct {
	backend, passFile, stateDir string
}

func (f *osyncFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.backend, "backend", "", "backend directory (e.g. a folder inside Dropbox) (required)")
	c.Flags().StringVar(&f.passFile, "password-file", "", "read the passphrase from this file (default $VEIL_PASSWORD_FILE, else prompt)")
	c.Flags().StringVar(&f.passFile, "passphrase-file", "", "the same as --password-file")
	c.Flags().MarkHidden("passphrase-file")
	c.MarkFlagRequired("backend")
}

// stateRoot is where default osync state directories go: $XDG_STATE_HOME/veil/osync, else
// ~/.local/state/veil/osync (the platform convention, resolved here and not in the library).
func stateRoot() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "veil", "osync")
}

func (f *osyncFlags) addState(c *cobra.Command) {
	c.Flags().StringVar(&f.stateDir, "state", "", "local journal directory, never inside the synced folder (default ~/.local/state/veil/osync/<backend id>)")
}

// passphrase reads it from --password-file, $VEIL_PASSWORD_FILE or the terminal: the same
// convention as the DupLESS commands (the variable names a file, it never holds the
// passphrase).
func (f *osyncFlags) passphrase(confirm bool) ([]byte, error) {
	return f.read("--password-file", profile.EnvPassword, "passphrase", confirm)
}

// read reads a passphrase (what) from f.passFile, else the file named by the variable env,
// else the terminal. The variables that held passphrases themselves are refused.
func (f *osyncFlags) read(flag, env, what string, confirm bool) ([]byte, error) {
	for _, old := range []string{"VEIL_OSYNC_PASSPHRASE", "VEIL_OSYNC_NEW_PASSPHRASE"} {
		if os.Getenv(old) != "" {
			return nil, fmt.Errorf("$%s is no longer read: put the passphrase in a file and name it with $%s or $%s",
				old, profile.EnvPassword, envNewPassword)
		}
	}
	return readPassphrase(f.passFile, flag, env, what, confirm)
}

func init() {
	register(func() *cobra.Command {
		c := &cobra.Command{
			Use:   "osync",
			Short: "ObliviSync: a synced folder whose write pattern reveals nothing",
			Long: `osync keeps a folder in a cloud-synced directory (Dropbox, Syncthing, a NAS share...)
as N equal-size encrypted files. Every epoch exactly k of them, chosen at random, the
superblock and the writer's lease file are rewritten, whether you wrote a gigabyte or
nothing: the provider cannot tell which files changed, how big they are or when you work.

  veil osync init --backend ~/Dropbox/osync
  veil osync mount --backend ~/Dropbox/osync ~/private        # read-write (one writer)
  veil osync mount --read-only --backend ~/Dropbox/osync /mnt # any number of readers
  veil osync status --backend ~/Dropbox/osync`,
		}
		c.AddCommand(newOsyncInit(), newOsyncMount(), newOsyncSync(), newOsyncStatus(), newOsyncPasswd(), newOsyncAdopt())
		return c
	})
	registerBench(newOsyncBench)
}

func newOsyncInit() *cobra.Command {
	var f osyncFlags
	p := oblivisync.DefaultParams
	kdf := oblivisync.DefaultKDF
	var kdfMiB uint32
	c := &cobra.Command{
		Use:   "init --backend DIR",
		Short: "Create a backend: N sparse files of B bytes and a passphrase-sealed key",
		Long: `init creates the backend directory: N files of exactly B bytes (sparse until first
written), a superblock, and osync.key, a random master key sealed with a key derived from
your passphrase by argon2id with a random salt. Capacity is about N*B bytes; keep the
backend well under a third full for ~1-epoch latency (the paper's linear regime).

Examples:
  veil osync init --backend ~/Dropbox/osync                      # 1024 x 1 MB, k=3, t=1s
  veil osync init --backend ~/Dropbox/osync --files 4096 --drip-rate 6 --drip-time 5s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pass, err := f.passphrase(true)
			if err != nil {
				return err
			}
			if kdfMiB == 0 || kdfMiB > 1<<10 {
				return fmt.Errorf("--kdf-memory must be between 1 and 1024 MiB, got %d", kdfMiB)
			}
			kdf.MemoryKiB = kdfMiB << 10
			if err := oblivisync.Init(f.backend, pass, p, kdf); err != nil {
				return err
			}
			printInit(cmd.OutOrStdout(), f.backend, p, kdf)
			warnBackendSpace(cmd.ErrOrStderr(), f.backend, p)
			return nil
		},
	}
	f.add(c)
	c.Flags().IntVar(&p.Files, "files", p.Files, "number of backend files N")
	c.Flags().IntVar(&p.FileSize, "file-size", p.FileSize, "bytes per backend file B (each holds two blocks)")
	c.Flags().IntVar(&p.K, "drip-rate", p.K, "backend files rewritten per epoch k")
	c.Flags().DurationVar(&p.DripTime, "drip-time", p.DripTime, "time between epochs t of a mounted writer")
	c.Flags().Uint32Var(&kdfMiB, "kdf-memory", kdf.MemoryKiB>>10, "argon2id memory in MiB")
	c.Flags().Uint32Var(&kdf.Time, "kdf-time", kdf.Time, "argon2id passes")
	return c
}

// warnBackendSpace warns when the backend's file system cannot hold the backend once its
// files, sparse at init, have all been written: a writer would stop with ENOSPC some
// epochs later, far from the command that made the mistake.
func warnBackendSpace(w io.Writer, dir string, p oblivisync.Params) {
	var st syscall.Statfs_t
	if syscall.Statfs(dir, &st) != nil {
		return
	}
	need, free := uint64(p.Files)*uint64(p.FileSize), st.Bavail*uint64(st.Bsize)
	if free < need {
		fmt.Fprintf(w, "warning: %s has %s free, but the backend takes %s once every file has been written (they start sparse): a writer will stop when the disk fills; put it on a larger disk or init it again with fewer --files or a smaller --file-size\n",
			dir, humanize.IBytes(free), humanize.IBytes(need))
	}
}

func newOsyncPasswd() *cobra.Command {
	var f osyncFlags
	var newFile string
	c := &cobra.Command{
		Use:   "passwd --backend DIR",
		Short: "Change the passphrase of a backend (the key and the files stay as they are)",
		Long: `passwd re-seals the backend's master key (osync.key) under a new passphrase, with a
fresh argon2id salt. No backend file is rewritten. Every mount, here or on other machines,
needs the new passphrase once the sync service has delivered the new osync.key.

The current passphrase comes from --password-file, $VEIL_PASSWORD_FILE or a prompt; the
new one from --new-password-file, $VEIL_NEW_PASSWORD_FILE or a prompt (twice). Both
variables name files, as for the DupLESS commands. The current passphrase is checked
before the new one is asked for; a new passphrase shorter than 12 characters draws a
warning.

Example:
  veil osync passwd --backend ~/Dropbox/osync`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			old, err := f.passphrase(false)
			if err != nil {
				return err
			}
			if err := oblivisync.CheckPassphrase(f.backend, old); err != nil {
				return err // before the new passphrase is asked for
			}
			nf := osyncFlags{passFile: newFile}
			nw, err := nf.read("--new-password-file", envNewPassword, "new passphrase", true)
			if err != nil {
				return err
			}
			if w := profile.WeakPassphrase(nw); w != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			if err := oblivisync.ChangePassphrase(f.backend, old, nw); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "passphrase of %s changed\n", f.backend)
			return nil
		},
	}
	f.add(c)
	c.Flags().StringVar(&newFile, "new-password-file", "", "read the new passphrase from this file (default $"+envNewPassword+", else prompt)")
	c.Flags().StringVar(&newFile, "new-passphrase-file", "", "the same as --new-password-file")
	c.Flags().MarkHidden("new-passphrase-file")
	return c
}

func newOsyncMount() *cobra.Command {
	var f osyncFlags
	var cfg fusefs.Config
	var verbose bool
	c := &cobra.Command{
		Use:   "mount --backend DIR [--read-only] MOUNTPOINT",
		Short: "Mount the backend with FUSE (read-write, or --read-only)",
		Long: `mount serves the backend as a normal directory at MOUNTPOINT (an existing empty
folder). A read-write mount (one per backend) buffers writes in an encrypted local journal
(they survive a crash) and syncs one epoch every drip time; stopping it (Ctrl-C, SIGTERM or fusermount3 -u) unmounts, then keeps the
same pace until the buffer is empty or --drain-timeout passes, saying what it syncs and what is left.
Read-only mounts (any number, on any machine sharing the folder) show only fully synced
versions and follow new epochs; they remember the newest epoch they showed (in the --state
directory) and refuse a backend rolled back behind it.

Examples:
  veil osync mount --backend ~/Dropbox/osync ~/private
  veil osync mount --read-only --backend ~/Dropbox/osync /mnt/osync

One writer per backend: a read-write mount holds the backend's lease (the file "lease",
renewed every epoch, removed on exit). A second writer is refused while it is fresh; a
crashed writer's lease is taken over at once by the same --state, by another machine
only after --lease-ttl. A state directory that another writer has overtaken refuses to
start; see 'veil osync adopt'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := emptyMountpoint(args[0]); err != nil {
				return err
			}
			pass, err := f.passphrase(false)
			if err != nil {
				return err
			}
			level := slog.LevelWarn
			if verbose {
				level = slog.LevelInfo
			}
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			cfg.Backend, cfg.Mountpoint, cfg.Passphrase = f.backend, args[0], pass
			cfg.Writer.StateDir, cfg.Writer.StateRoot = f.stateDir, stateRoot()
			cfg.Writer.Host, _ = os.Hostname()
			mode := "read-write: one epoch per drip time; unmounting first syncs what is pending"
			if cfg.ReadOnly {
				mode = "read-only: follows the writer's epochs"
			}
			cfg.Ready = func() {
				fmt.Fprintf(cmd.ErrOrStderr(), "mounted %s at %s (%s); Ctrl-C to unmount\n", f.backend, args[0], mode)
			}
			cfg.Draining = func(st oblivisync.Stats) {
				fmt.Fprintf(cmd.ErrOrStderr(), "unmounted %s; syncing %s pending in %s before exiting (at the drip pace, at most --drain-timeout %v; a second Ctrl-C leaves it in the local journal for the next mount)\n",
					args[0], humanize.IBytes(st.PendingBytes), plural(st.PendingInodes, "file or directory", "files or directories"), cfg.DrainTimeout)
			}
			return fusefs.Run(cmd.Context(), cfg)
		},
	}
	f.add(c)
	f.addState(c)
	c.Flags().BoolVar(&cfg.ReadOnly, "read-only", false, "mount read-only (never writes to the backend)")
	c.Flags().DurationVar(&cfg.DrainTimeout, "drain-timeout", time.Minute, "how long unmounting keeps syncing to empty the buffer")
	c.Flags().DurationVar(&cfg.Writer.LeaseTTL, "lease-ttl", oblivisync.DefaultLeaseTTL, "the backend's writer lease outlives this writer's last epoch by this long; another machine may take over a crashed writer's backend after it")
	c.Flags().Int64Var(&cfg.Writer.MaxPending, "max-pending", 0, "bound on the local journal in bytes; writes beyond it fail with ENOSPC until epochs drain it (default: backend capacity)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "log mounts and epochs")
	c.Flags().StringVar(&cfg.MetricsAddr, "metrics", "", "serve /healthz and /metrics (prometheus) on this address, e.g. 127.0.0.1:9464")
	return c
}

func newOsyncSync() *cobra.Command {
	var f osyncFlags
	var epochs, maxEpochs int
	var drain, asJSON bool
	c := &cobra.Command{
		Use:   "sync --backend DIR [--epochs N | --drain]",
		Short: "Run epochs now, without FUSE (for scripts and tests)",
		Long: `sync opens the writer (recovering its local journal after a crash), runs epochs back
to back and exits. Each epoch rewrites exactly k random backend files and the superblock.
Running epochs on demand instead of on a clock reveals when you sync; for a folder that
is observed continuously prefer a mounted writer, whose clock never depends on activity.

--json prints one object per epoch (none when --drain finds nothing pending): epoch, files_rewritten (the numbers of the backend
files rewritten besides the superblock; status's "files" is how many there are), bytes_written, fragments_synced, bytes_synced, inodes_committed,
pending_fragments, pending_bytes, pending_inodes, duration_ns.

Examples:
  veil osync sync --backend ~/Dropbox/osync --epochs 10
  veil osync sync --backend ~/Dropbox/osync --drain --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case drain && cmd.Flags().Changed("epochs"):
				return argError{errors.New("give --epochs N or --drain, not both"), cmd}
			case epochs < 1:
				return argError{fmt.Errorf("--epochs %d: give at least 1", epochs), cmd}
			case maxEpochs < 1:
				return argError{fmt.Errorf("--max-epochs %d: give at least 1", maxEpochs), cmd}
			}
			pass, err := f.passphrase(false)
			if err != nil {
				return err
			}
			out := json.NewEncoder(cmd.OutOrStdout())
			host, _ := os.Hostname()
			st, err := oblivisync.SyncEpochs(cmd.Context(), f.backend, pass, oblivisync.Options{StateDir: f.stateDir, StateRoot: stateRoot(), Host: host}, epochs, drain, maxEpochs,
				func(r oblivisync.EpochReport) {
					if asJSON {
						out.Encode(r)
					}
				})
			if err != nil {
				return err
			}
			if !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "epoch %d: %s pending in %s; %.1f%% full\n", st.Epoch, humanize.IBytes(st.PendingBytes),
					plural(int(st.PendingInodes), "file", "files"), 100*float64(st.Used)/float64(st.Capacity))
			}
			return nil
		},
	}
	f.add(c)
	f.addState(c)
	c.Flags().IntVar(&epochs, "epochs", 1, "number of epochs to run")
	c.Flags().BoolVar(&drain, "drain", false, "run epochs until nothing is pending")
	c.Flags().IntVar(&maxEpochs, "max-epochs", 100000, "give up draining after this many epochs")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per epoch")
	return c
}

func newOsyncBench() *cobra.Command {
	c := osbench.Config{Files: 256, FileSize: 64 << 10, Ks: []int{3, 6, 9, 12}, Fill: 920.0 / 1024, Runs: 1}
	var names []string
	var bufferEpochs, fuseMB int
	var paper, asJSON bool
	cmd := &cobra.Command{
		Use:   "osync",
		Short: "ObliviSync experiments: the paper's Figs. 4-7, writer CPU, FUSE write speed",
		Long: `osync reproduces the ObliviSync paper's experiments on veil's engine, with epochs driven
by sync (not a clock), and prints one row per data point:

  throughput  Fig. 4: epochs until each fraction of ~90%*N one-block-pair files is
              visible to readers, bandwidth overhead, writer CPU per synced MB
  variable    Fig. 5: lognormal vs fixed-size files, same total bytes (25% of capacity)
  latency     Fig. 6: epochs per file when files arrive one at a time, by fill level
  buffer      Fig. 7: pending-buffer size under thrashing at 20/50/75% fill
  fuse-write  sustained write speed through a FUSE mount into the buffer

The default is scaled down (N=256, B=64 KiB, 1 run; about a minute); --paper uses the
paper's N=1024, B=1 MiB and 3 runs (hours for the full set).

Examples:
  veil bench osync
  veil bench osync --experiment throughput --k 3 --json
  veil bench osync --paper --experiment throughput,latency`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if paper {
				c.Files, c.FileSize, c.Runs = 1024, 1<<20, 3
			}
			out := json.NewEncoder(cmd.OutOrStdout())
			return osbench.Run(c, names, bufferEpochs, int64(fuseMB)<<20, func(r osbench.Row) {
				if asJSON {
					out.Encode(r)
					return
				}
				keys := make([]string, 0, len(r))
				for k := range r {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				var b strings.Builder
				fmt.Fprintf(&b, "%-11s", r["experiment"])
				for _, k := range keys {
					if k != "experiment" {
						fmt.Fprintf(&b, " %s=%v", k, fmtVal(r[k]))
					}
				}
				fmt.Fprintln(cmd.OutOrStdout(), b.String())
			})
		},
	}
	cmd.Flags().StringSliceVar(&names, "experiment", nil, "experiments to run (default all): "+strings.Join(osbench.Experiments, ","))
	cmd.Flags().IntVar(&c.Files, "files", c.Files, "backend files N")
	cmd.Flags().IntVar(&c.FileSize, "file-size", c.FileSize, "backend file size B in bytes")
	cmd.Flags().IntSliceVar(&c.Ks, "k", c.Ks, "drip rates to compare (variable and buffer use the first)")
	cmd.Flags().Float64Var(&c.Fill, "fill", c.Fill, "fraction of N inserted for throughput and latency")
	cmd.Flags().IntVar(&c.Runs, "runs", c.Runs, "runs averaged")
	cmd.Flags().IntVar(&bufferEpochs, "buffer-epochs", 150, "syncs observed per fill level in the buffer experiment")
	cmd.Flags().Float64Var(&c.Thrash, "thrash", 1, "buffer experiment: mean bytes rewritten per epoch, as a fraction of B")
	cmd.Flags().IntVar(&c.ThrashMaxFile, "thrash-max-file", 0, "buffer experiment: rewrite only files up to this many bytes (0: any)")
	cmd.Flags().IntVar(&fuseMB, "fuse-mb", 128, "MiB written per write size in fuse-write")
	cmd.Flags().StringVar(&c.Dir, "dir", "", "scratch directory (default the system temp dir)")
	cmd.Flags().BoolVar(&paper, "paper", false, "the paper's parameters: N=1024, B=1 MiB, 3 runs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return cmd
}

func fmtVal(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', 4, 64)
	}
	return fmt.Sprint(v)
}
