package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/bench/store"
	"github.com/veil-project/veil/internal/storage/open"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storewire"
)

func init() {
	register(newStoreCommand)
	registerBench(newStoreBenchCommand)
	registerBench(newStoreNodesBenchCommand)
}

func newStoreCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "store",
		Short: "Run veil's deduplicating storage service",
		Long: `store runs veil's own storage service: every user gets a private namespace (put, get,
list, delete, search, create, move over HTTPS), and the service stores each distinct content
once across all users. It hashes what it receives itself (SHA-256), so no user can fake a
duplicate of someone else's content, and it never tells a client whether its upload was a
duplicate.

  veil store init --dir /srv/veil-store
  veil store user add alice --dir /srv/veil-store --out alice.cred
  veil store serve --dir /srv/veil-store --listen :7480
  veil store stats --dir /srv/veil-store        # (bbolt: server stopped; PostgreSQL: any time)

Clients reach it as veil://host:7480 with the credential file (VEIL_STORE_CREDENTIAL).`,
	}
	c.AddCommand(newStoreInitCommand(), newStoreUserCommand(), newStoreServeCommand(),
		newStoreStatsCommand(), newStoreGCCommand(), newStoreFsckCommand(), newStoreCertCommand())
	return c
}

func newStoreCertCommand() *cobra.Command {
	var dir string
	c := newCertCommand(certKind{cmd: "veil store cert", dir: "/srv/veil-store", host: "store3.example.org",
		validity: storeserver.ServerCertValidity, tlsDir: storeserver.TLSDir,
		copies: "DIR/tls/ on every other node"}, &dir)
	dirFlag(c, &dir)
	return c
}

func dirFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "dir", "", "the store's data directory (required)")
	c.MarkFlagRequired("dir")
}

// storeConfig opens the blob store a data directory records (or flag, when it agrees). Its
// Config says on stderr when opening the directory upgrades its database, which older
// binaries then refuse (found by a user walkthrough: 'veil store stats' upgraded a store
// without a word, where docs/deploy.md asks for a copy first if going back may be needed).
func storeConfig(ctx context.Context, dir, flag string) (storeserver.Config, error) {
	cfg := storeserver.Config{Upgraded: func(from, to int) {
		fmt.Fprintf(os.Stderr, "upgraded the store in %s from database version %d to %d: veil of session 16 and older "+
			"refuses it now (docs/deploy.md, Upgrading)\n", dir, from, to)
	}}
	loc, err := storeserver.ResolveBlobs(dir, flag)
	if err != nil || loc == storeserver.LocalBlobs {
		return cfg, err
	}
	be, err := open.Open(ctx, loc, open.EnvCredentials(open.Credentials{}, os.Getenv))
	if err != nil {
		return storeserver.Config{}, fmt.Errorf("blobs %s: %w", loc, err)
	}
	cfg.Blobs, cfg.BlobLocation = be, loc
	return cfg, nil
}

func newStoreInitCommand() *cobra.Command {
	var dir, blobs, db string
	var hosts []string
	c := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Create a store: database, TLS certificate, admin credential",
		Long: `init creates a store in DIR: the metadata database, content folders, a self-signed CA and a
server certificate (valid for localhost, 127.0.0.1, ::1, this host's name and every --host),
and the admin credential DIR/admin.cred (for /v1/stats and /metrics).

  veil store init --dir /srv/veil-store --host store.example.org --host 10.0.0.5
  veil store init --dir D --blobs 's3://127.0.0.1:7070/veil-blobs?tls=0&create=1'  # content in S3, recorded in D
  veil store init --dir D --db 'postgres://veil@db.example.org/veil' --blobs 's3://...'  # several nodes (docs/deploy.md)

With --db the metadata lives in that PostgreSQL database (its tables are created; a database
that has them is refused) instead of DIR/meta.db: every node serving a copy of DIR shares it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			loc, cfg := storeserver.LocalBlobs, storeserver.Config{}
			if blobs != "" {
				var err error
				if cfg, err = storeConfig(cmd.Context(), dir, blobs); err != nil {
					return err
				}
				loc = blobs
			}
			if err := storeserver.InitDB(dir, db, loc, cfg.Blobs, hosts...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "initialized store in %s (admin credential: %s/%s)\n", dir, dir, storeserver.AdminCredentialFile)
			return nil
		},
	}
	dirFlag(c, &dir)
	c.Flags().StringVar(&blobs, "blobs", "", "keep content at this location instead of DIR/blobs (recorded in DIR)")
	c.Flags().StringVar(&db, "db", "", "keep the metadata in this PostgreSQL database (postgres://user@host/db, no password: PGPASSWORD or ~/.pgpass) instead of DIR/meta.db (recorded in DIR)")
	c.Flags().StringSliceVar(&hosts, "host", nil, "extra DNS name or IP address for the server certificate (repeatable)")
	return c
}

// storeTarget is where an admin command acts: the data directory (server stopped) or a
// running server (--url with the admin credential).
type storeTarget struct{ dir, url, cred, blobs string }

func (t *storeTarget) flags(c *cobra.Command) {
	c.Flags().StringVar(&t.blobs, "blobs", "", "with --dir: the blob location (default: the one the data directory records)")
	c.Flags().StringVar(&t.dir, "dir", "", "the store's data directory (server stopped, unless the metadata is in PostgreSQL)")
	c.Flags().StringVar(&t.url, "url", "", "a running store instead (https://host:port)")
	c.Flags().StringVar(&t.cred, "credential", "", "the admin credential file, with --url (DIR/admin.cred)")
}

// run calls offline with the opened data directory, or online with an admin client.
func (t *storeTarget) run(offline func(*storeserver.Service) error, online func(*remote.Admin) error) error {
	switch {
	case t.url != "":
		cred, err := storewire.LoadCredential(t.cred)
		if err != nil {
			return err
		}
		a, err := remote.NewAdmin(t.url, cred)
		if err != nil {
			return err
		}
		defer a.Close()
		return online(a)
	case t.dir != "":
		cfg, err := storeConfig(context.Background(), t.dir, t.blobs)
		if err != nil {
			return err
		}
		return storeserver.WithConfig(t.dir, cfg, offline)
	}
	return usageError("give --dir DIR, or --url URL and --credential ADMIN.cred")
}

func newStoreUserCommand() *cobra.Command {
	c := &cobra.Command{Use: "user", Short: "Add, list or remove users, or change a user's quota"}
	c.AddCommand(newStoreUserAdd(), newStoreUserList(), newStoreUserQuota(), newStoreUserRemove())
	return c
}

func newStoreUserAdd() *cobra.Command {
	var tgt storeTarget
	var out, endpoint, quota string
	add := &cobra.Command{
		Use:   "add NAME (--dir DIR | --url URL --credential ADMIN.cred) [--out FILE]",
		Short: "Create a user and print (or write) their credential",
		Long: `add creates a user with an empty namespace and prints their credential (JSON: user, secret,
the store's CA certificate) or writes it to --out with mode 0600. The credential is the only
copy of the secret: the store keeps just its hash. With the server stopped (or any time, when
the metadata is in PostgreSQL), give the data directory; while it runs, its URL and the
admin credential.

  veil store user add alice --dir /srv/veil-store --out alice.cred --endpoint https://store:7480
  veil store user add bob --url https://127.0.0.1:7480 --credential /srv/veil-store/admin.cred --quota 10GiB`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var q int64
			if quota != "" {
				n, err := parseBytes(quota)
				if err != nil {
					return fmt.Errorf("--quota: %w", err)
				}
				q = n
			}
			// The credential is the only copy of the secret: a user whose credential could
			// not be delivered is removed again, so the name can be added once more (found by
			// review: a failed --out left the name taken by a secret nobody had).
			deliver := func(cred storewire.Credential, remove func() error) error {
				cred.Endpoint = endpoint
				var err error
				if out == "" {
					_, err = cmd.OutOrStdout().Write(cred.Marshal())
				} else {
					err = atomicfile.Write(out, cred.Marshal(), 0o600, true)
				}
				if err != nil {
					if rerr := remove(); rerr != nil {
						return fmt.Errorf("write credential: %w (and removing the user again failed: %v)", err, rerr)
					}
					return fmt.Errorf("write credential: %w (the user was not added)", err)
				}
				return nil
			}
			return tgt.run(func(s *storeserver.Service) error {
				cred, err := s.AddUser(args[0], storeserver.WithQuota(q))
				if err != nil {
					return err
				}
				return deliver(cred, func() error { return s.RemoveUser(args[0]) })
			}, func(a *remote.Admin) error {
				cred, err := a.AddUser(cmd.Context(), args[0], q)
				if err != nil {
					return err
				}
				return deliver(cred, func() error { return a.RemoveUser(context.WithoutCancel(cmd.Context()), args[0]) })
			})
		},
	}
	tgt.flags(add)
	add.Flags().StringVar(&out, "out", "", "write the credential to this file (mode 0600) instead of stdout")
	add.Flags().StringVar(&endpoint, "endpoint", "", "record the service's URL in the credential (https://host:port)")
	add.Flags().StringVar(&quota, "quota", "", "limit the user's logical bytes (e.g. 500MiB, 10GiB)")
	return add
}

func newStoreUserList() *cobra.Command {
	var tgt storeTarget
	var jsonOut bool
	list := &cobra.Command{
		Use: "list (--dir DIR | --url URL --credential ADMIN.cred)", Short: "List users with their usage", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var users []storewire.User
			err := tgt.run(func(s *storeserver.Service) error {
				us, err := s.Users()
				for _, u := range us {
					users = append(users, storewire.User{Name: u.Name, Admin: u.Admin, Quota: u.Quota, Used: u.Used, Created: u.Created})
				}
				return err
			}, func(a *remote.Admin) (err error) {
				users, err = a.Users(cmd.Context())
				return err
			})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if jsonOut {
				return json.NewEncoder(w).Encode(users)
			}
			fmt.Fprintf(w, "%-20s %-6s %12s %12s  %s\n", "USER", "ADMIN", "USED", "QUOTA", "CREATED")
			for _, u := range users {
				q := "-"
				if u.Quota > 0 {
					q = humanBytes(u.Quota)
				}
				fmt.Fprintf(w, "%-20s %-6v %12s %12s  %s\n", u.Name, u.Admin, humanBytes(u.Used), q, u.Created.Format(time.RFC3339))
			}
			return nil
		},
	}
	tgt.flags(list)
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return list
}

func newStoreUserQuota() *cobra.Command {
	var tgt storeTarget
	c := &cobra.Command{
		Use:   "quota NAME SIZE (--dir DIR | --url URL --credential ADMIN.cred)",
		Short: "Change a user's quota (none: no quota)",
		Long: `quota sets the logical bytes a user may store (content and names, as 'user list' counts
them) to SIZE, or removes the limit with "none" (or 0). What the user stores already is
kept when it is past the new quota; writes that would grow it are refused. With the
metadata in PostgreSQL every node applies the change within 2 s.

  veil store user quota alice 20GiB --dir /srv/veil-store
  veil store user quota bob none --url https://127.0.0.1:7480 --credential /srv/veil-store/admin.cred`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var q int64
			if args[1] != "none" {
				n, err := parseBytes(args[1])
				if err != nil {
					return fmt.Errorf("quota: %w (or none)", err)
				}
				q = n
			}
			return tgt.run(func(s *storeserver.Service) error { return s.SetQuota(args[0], q) },
				func(a *remote.Admin) error { return a.SetQuota(cmd.Context(), args[0], q) })
		},
	}
	tgt.flags(c)
	return c
}

func newStoreUserRemove() *cobra.Command {
	var tgt storeTarget
	remove := &cobra.Command{
		Use:   "remove NAME (--dir DIR | --url URL --credential ADMIN.cred)",
		Short: "Delete a user and all their names (content is reclaimed by gc)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tgt.run(func(s *storeserver.Service) error { return s.RemoveUser(args[0]) },
				func(a *remote.Admin) error { return a.RemoveUser(cmd.Context(), args[0]) })
		},
	}
	tgt.flags(remove)
	return remove
}

func newStoreServeCommand() *cobra.Command {
	var dir, listen, blobs, maxSize, logLevel string
	var cfg storeserver.Config
	c := &cobra.Command{
		Use:   "serve --dir DIR [--listen ADDR]",
		Short: "Serve the store's HTTPS API",
		Long: `serve answers the store API (docs/formats/store-api.md) over HTTPS with the certificate made
by init, until SIGINT or SIGTERM (in-flight requests finish first). /healthz (liveness)
and /readyz (readiness: 503 naming the metadata database or the blob store when the node
cannot reach it, or a data directory that cannot take a write) are open; /v1/stats and /metrics need the admin credential (/metrics can
be opened with --public-metrics). Content lives where init recorded it (DIR/blobs, or init --blobs);
--blobs may restate it, and another location is refused.

  veil store serve --dir /srv/veil-store --listen :7480
  veil store serve --dir D             # an S3-backed store (init --blobs): keys from AWS_* env
  veil store serve --dir D --listen 127.0.0.1:8080 --insecure-http        # loopback development`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.InsecureHTTP && !loopback(listen) {
				return fmt.Errorf("--insecure-http is only allowed on a loopback address, not %q", listen)
			}
			n, err := parseBytes(maxSize)
			if err != nil {
				return fmt.Errorf("--max-object-size: %w", err)
			}
			cfg.MaxObjectSize = n
			if cfg.Logger, err = serverLogger(cmd, logLevel); err != nil {
				return err
			}
			bc, err := storeConfig(cmd.Context(), dir, blobs)
			if err != nil {
				return err
			}
			cfg.Blobs, cfg.BlobLocation, cfg.Upgraded = bc.Blobs, bc.BlobLocation, bc.Upgraded
			return storeserver.Run(cmd.Context(), dir, listen, cfg, func(addr string) {
				fmt.Fprintf(cmd.OutOrStdout(), "serving %s on %s\n", dir, addr)
			})
		},
	}
	dirFlag(c, &dir)
	f := c.Flags()
	d := storeserver.DefaultConfig()
	f.StringVar(&listen, "listen", storeserver.DefaultAddr, "address to listen on")
	f.BoolVar(&cfg.InsecureHTTP, "insecure-http", false, "serve plain HTTP (loopback addresses only)")
	f.StringVar(&blobs, "blobs", "", "the blob location (default: the one DIR records, set by init)")
	f.StringVar(&maxSize, "max-object-size", exactBytes(d.MaxObjectSize), "largest object accepted")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", d.RequestTimeout, "deadline for reading or writing one request")
	f.IntVar(&cfg.MaxConns, "max-conns", 1024, "concurrent connections (0: unlimited)")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "graceful drain limit on SIGTERM")
	f.BoolVar(&cfg.PublicMetrics, "public-metrics", false, "serve /metrics without the admin credential")
	logLevelFlag(f, &logLevel)
	f.IntVar(&cfg.MaxBatchObjects, "max-batch-objects", d.MaxBatchObjects, "objects in one batch upload (POST /v1/batch)")
	f.Int64Var(&cfg.MaxBatchBytes, "max-batch-bytes", d.MaxBatchBytes, "content bytes in one batch upload (held in memory while it is stored)")
	f.IntVar(&cfg.Limits.MaxDepth, "max-path-depth", d.Limits.MaxDepth, "components in one path")
	f.IntVar(&cfg.Limits.MaxNameLen, "max-name-len", d.Limits.MaxNameLen, fmt.Sprintf("bytes in one path component (at most %d)", d.Limits.MaxNameLen))
	f.IntVar(&cfg.Limits.MaxPathLen, "max-path-len", d.Limits.MaxPathLen, "bytes in one whole path")
	f.IntVar(&cfg.Limits.MaxDirEntries, "max-dir-entries", d.Limits.MaxDirEntries, "entries directly in one directory")
	return c
}

func loopback(addr string) bool {
	h := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		h = addr[:i]
	}
	h = strings.Trim(h, "[]")
	return h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

func newStoreBenchCommand() *cobra.Command {
	var opts storebench.Options
	var inProcess bool
	c := &cobra.Command{
		Use:   "store",
		Short: "Put/get throughput of the store vs a plain disk copy and plain S3",
		Long: `store measures, in one run on this machine, put and get throughput for 4 KiB, 1 MiB and
64 MiB objects through a child 'veil store serve' (HTTPS on loopback), against writing the same bytes to
the same disk (write + fsync) and against plain S3 PUT/GET to a real versitygw started for the
run (skipped with a note if versitygw is not installed), plus 4 KiB puts per second with 16
concurrent clients.

  veil bench store
  veil bench store --json --seconds 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !inProcess {
				self, err := os.Executable()
				if err != nil {
					return err
				}
				opts.Veil = self
			}
			return storebench.Run(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	c.Flags().BoolVar(&inProcess, "in-process", false, "serve the store inside the bench process instead of a child 'veil store serve'")
	c.Flags().BoolVar(&opts.JSON, "json", false, "print one JSON object per line")
	d := storebench.DefaultOptions()
	c.Flags().Float64Var(&opts.Seconds, "seconds", d.Seconds, "time spent on each measurement")
	c.Flags().IntVar(&opts.Clients, "clients", d.Clients, "concurrent clients for the small-object put rate")
	c.Flags().StringVar(&opts.Dir, "dir", "", "scratch directory on the disk to measure (default: a temp dir)")
	return c
}

// exactBytes writes n the way parseBytes reads it back ("5GiB", "64MiB", "1000"): flag
// defaults taken from the library's byte counts.
func exactBytes(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.unit)
		}
	}
	return fmt.Sprint(n)
}

// parseBytes reads a whole size through go-humanize: "123", "10KiB", "5MiB", "2GiB"
// (powers of 1024), "1KB", "5MB" (powers of 1000), "7 B".
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	n, err := humanize.ParseBytes(t)
	if err != nil || t == "" || t[0] < '0' || t[0] > '9' || strings.ContainsAny(t, ".,") || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size like 500MiB", s)
	}
	return int64(n), nil
}
