package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/veil-project/veil/internal/allinone"
	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storewire"
)

func init() { register(newServeCommand) }

func newServeCommand() *cobra.Command {
	var dir string
	var users []string
	var cfg allinone.Config
	var metal bool
	var metalAddr1, metalAddr2 string
	metalParams := access.DefaultParams
	var run allinone.Options
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run an all-in-one deployment: key server + deduplicating storage service",
		Long: `serve runs a complete DupLESS deployment on this machine: the key server (HTTPS and UDP)
and veil's deduplicating storage service (TLS), with all data in one directory (--dir). The
first run creates everything; later runs reuse it (its addresses are fixed at the first
run: a different --ks-listen, --metal-files-log2 etc. later is refused, not ignored; a first run that cannot
listen, say on a taken port, removes what it created). It listens on loopback unless
told otherwise, and stops cleanly on Ctrl-C or SIGTERM. The addresses are written into the
invitations: give a host name or IP address clients reach, not a wildcard (:7480, 0.0.0.0).

--user NAME (repeatable) registers a user and writes an invitation to
<dir>/invites/NAME.invite once the servers listen (complete when it appears); give that
file to the user, who runs 'veil init --invite FILE' (once: a second init from the same
invitation is refused). A user registered by an earlier run is not registered again.

Examples:
  veil serve --dir ~/veil-server --user alice --user bob
  veil serve adduser carol --dir ~/veil-server   (running or not)
  veil serve stats --dir ~/veil-server           (logical vs physical bytes)
  veil store gc --url https://127.0.0.1:7480 --credential ~/veil-server/store/admin.cred
                                                 (reclaim the space users' 'veil prune' freed;
                                                  or 'veil store gc --dir ~/veil-server/store' stopped)
  veil serve --dir ~/veil-server --metal         (also Metal's two servers; users run
                                                  'veil metal join <dir>/metal/1/deployment.json')`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var explicit allinone.Config
			for flag, p := range map[string]*string{"ks-listen": &explicit.KSAddr, "ks-udp": &explicit.KSUDP, "store-listen": &explicit.StoreAddr,
				"peekaboo-k-listen": &explicit.PkbKAddr, "peekaboo-v-listen": &explicit.PkbVAddr} {
				if cmd.Flags().Changed(flag) {
					*p = cmd.Flags().Lookup(flag).Value.String()
				}
			}
			if err := metalBlockFits(metal, metalParams.BlockSize); err != nil {
				return err
			}
			got, undo, err := allinone.Setup(dir, cfg, explicit)
			if err != nil {
				return err
			}
			if metal {
				if err := allinone.InitMetal(dir, metalAddr1, metalAddr2, metalParams, metalExplicit(cmd)); err != nil {
					undo()
					return fmt.Errorf("metal: %w", err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "metal: users run 'veil metal join %s'\n", allinone.MetalDeploymentFile(dir))
			}
			run.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			d, err := allinone.Start(cmd.Context(), dir, run)
			if err != nil {
				undo() // a first run on a taken port leaves nothing half made
				return err
			}
			// Invitations once the servers listen: a script that waits for the file can use it.
			for _, u := range users {
				path, err := writeInvite(dir, u)
				if errors.Is(err, storage.ErrExists) || errors.Is(err, keyserver.ErrExists) {
					// Registered by an earlier run whose invitation is gone (handed over and
					// deleted): a restart with the same --user list serves on (found by review:
					// it stopped, "already exists").
					fmt.Fprintf(cmd.ErrOrStderr(), "%s is already registered and %s is gone: no new invitation "+
						"('veil store user remove' and 'veil keyserver client revoke' to withdraw the old one)\n",
						u, filepath.Join(dir, "invites", u+".invite"))
					continue
				}
				if err != nil {
					d.Stop()
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "invitation for %s: %s\n", u, path)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "veil serve: key server https://%s (udp %s), storage service veil://%s, peekaboo V-server https://%s, data in %s\n",
				got.KSAddr, got.KSUDP, got.StoreAddr, allinone.PeekabooVAddr(got), dir)
			return d.Wait()
		},
	}
	c.PersistentFlags().StringVar(&dir, "dir", "veil-server", "data directory of the deployment")
	c.Flags().StringArrayVar(&users, "user", nil, "register this user and write its invitation (repeatable)")
	c.Flags().StringVar(&cfg.KSAddr, "ks-listen", allinone.DefaultConfig.KSAddr, "key server HTTPS address (first run only)")
	c.Flags().StringVar(&cfg.KSUDP, "ks-udp", allinone.DefaultConfig.KSUDP, "key server UDP address (first run only)")
	c.Flags().StringVar(&cfg.StoreAddr, "store-listen", allinone.DefaultConfig.StoreAddr, "storage service address (first run only)")
	c.Flags().StringVar(&cfg.PkbKAddr, "peekaboo-k-listen", allinone.DefaultPkbKAddr, "Peekaboo K-server address (first run only)")
	c.Flags().StringVar(&cfg.PkbVAddr, "peekaboo-v-listen", allinone.DefaultPkbVAddr, "Peekaboo V-server address (first run only)")
	c.Flags().BoolVar(&metal, "metal", false, "also run Metal's two servers (created on the first run with --metal; later runs start them whenever they exist)")
	c.Flags().StringVar(&metalAddr1, "metal-listen1", allinone.DefaultMetal1Addr, "Metal Server 1 address (first --metal run only)")
	c.Flags().StringVar(&metalAddr2, "metal-listen2", allinone.DefaultMetal2Addr, "Metal Server 2 address (first --metal run only)")
	c.Flags().IntVar(&metalParams.D, "metal-files-log2", metalParams.D, "Metal: 2^N file ids (first --metal run only; at most 20)")
	c.Flags().IntVar(&metalParams.BlockSize, "metal-block-size", metalParams.BlockSize, "Metal: bytes per block (file id), a multiple of 16, at least 48 (first --metal run only)")
	c.Flags().DurationVar(&run.Metal.SilenceTimeout, "metal-silence-timeout", 10*time.Second, "Metal: Server 1 cuts the 2PC link (failing the call in progress, answering the requests queued behind it) when Server 2 echoes nothing on the liveness probe for this long; a busy Server 2 echoes (any run)")
	c.AddCommand(&cobra.Command{
		Use:   "adduser NAME",
		Short: "Register a user and write an invitation to <dir>/invites/NAME.invite",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := writeInvite(dir, args[0])
			if err == nil {
				fmt.Fprintln(cmd.OutOrStdout(), path)
			}
			return err
		},
	}, newServeStatsCommand(&dir))
	return c
}

func newServeStatsCommand(dir *string) *cobra.Command {
	var jsonOut bool
	c := &cobra.Command{
		Use:   "stats",
		Short: "Show the storage service's logical vs physical bytes (the dedup saving)",
		Long: `stats prints the storage service's totals (users, objects, logical and physical bytes,
garbage, dedup ratio) as a table, or with --json as one JSON object. It works whether the
deployment is running or not.

Examples:
  veil serve stats --dir ~/veil-server
  veil serve stats --dir ~/veil-server --json | jq .dedup_ratio`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := allinone.Stats(*dir)
			if err != nil {
				return err
			}
			return printStoreStats(cmd.OutOrStdout(), st, jsonOut)
		},
	}
	c.Flags().BoolVar(&jsonOut, "json", false, "print JSON")
	return c
}

func writeInvite(dir, user string) (string, error) {
	if err := storewire.CheckUser(user); err != nil { // before the name becomes a path
		return "", fmt.Errorf("add user: %w", err)
	}
	if user == storeserver.AdminUser { // taken by the store, not an earlier invitation
		return "", fmt.Errorf("add user: %q is the store's administrator", user)
	}
	path := filepath.Join(dir, "invites", user+".invite")
	pkbPath := filepath.Join(dir, "invites", user+".peekaboo")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil { // before registering anyone
		return "", err
	}
	if _, err := os.Stat(path); err != nil { // else already registered
		b, err := allinone.AddUser(dir, user)
		if err != nil {
			return "", fmt.Errorf("add user %s: %w", user, err)
		}
		// Atomically: a script waits for the file to appear and reads it at once (README).
		if err := atomicfile.Write(path, b, 0o600, true); err != nil {
			return "", err
		}
	}
	// Peekaboo: the user's credential beside the invitation ('veil peekaboo join FILE'),
	// also when an earlier run stopped between the two files.
	if _, err := os.Stat(pkbPath); err == nil {
		return path, nil
	}
	pkb, err := allinone.AddPeekabooUser(context.Background(), dir, user)
	if err != nil {
		return "", fmt.Errorf("add peekaboo user %s: %w", user, err)
	}
	return path, atomicfile.Write(pkbPath, pkb, 0o600, true)
}

// metalExplicit is the Metal flags the user gave (a later run refuses different ones).
func metalExplicit(cmd *cobra.Command) allinone.MetalExplicit {
	var e allinone.MetalExplicit
	f := cmd.Flags()
	if f.Changed("metal-listen1") {
		e.Addr1, _ = f.GetString("metal-listen1")
	}
	if f.Changed("metal-listen2") {
		e.Addr2, _ = f.GetString("metal-listen2")
	}
	if f.Changed("metal-files-log2") {
		e.D, _ = f.GetInt("metal-files-log2")
	}
	if f.Changed("metal-block-size") {
		e.BlockSize, _ = f.GetInt("metal-block-size")
	}
	return e
}
