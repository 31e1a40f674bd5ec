package main

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/server"
)

func pkbLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func newPkbKServerCommand() *cobra.Command {
	c := &cobra.Command{Use: "kserver", Short: "Run Peekaboo's K-server (keys and pair ids; never owners, clients or values)",
		Long: `kserver runs Peekaboo's K-server, the half that holds keys. A deployment, in order (two
machines, or one for a try; 'veil serve' runs both halves for you):

  veil peekaboo kserver init --dir /srv/pkb-k --endpoint https://k.example:7490 --host k.example
  veil peekaboo kserver serve --dir /srv/pkb-k --listen :7490
  # give /srv/pkb-k/relay.cred to the V-server's operator, and the fingerprint
  # 'veil peekaboo kserver pubkey --dir /srv/pkb-k' prints to its users
  veil peekaboo vserver init --dir /srv/pkb-v --relay-cred relay.cred --endpoint https://v.example:7491 --host v.example
  veil peekaboo vserver serve --dir /srv/pkb-v --listen :7491
  veil peekaboo vserver adduser alice --admin-cred /srv/pkb-v/admin.cred --out alice.pkb
  veil peekaboo join alice.pkb          # on alice's machine

--listen must serve the port of --endpoint (the defaults, 127.0.0.1:7490 and 127.0.0.1:7491, are loopback only).`}
	var dir, endpoint, listen string
	var hosts []string
	var cfg kserver.Config
	tab := pir.DefaultParams
	initC := &cobra.Command{
		Use:   "init --dir DIR --endpoint https://HOST:PORT [--pir-bits N --pir-slots N]",
		Short: "Create a K-server: HPKE key, CA, TLS certificate, the V-server's relay credential",
		Long: `init creates a K-server in DIR: its HPKE key pair (ML-KEM-768+X25519), a CA, a server
certificate and DIR/relay.cred, the credential the V-server relays with (mutual TLS). Hand
relay.cred to the V-server's operator, and the key's fingerprint to clients. relay.cred also
names the private-query table both servers keep (2^pir-bits buckets of pir-slots slots,
40 bytes each; size it for about 32 pairs per bucket: 12 bits up to ~1.3 x 10^5 pairs,
15 bits for 10^6).

  veil peekaboo kserver init --dir /srv/pkb-k --endpoint https://k.example:7490 --host k.example
  veil peekaboo kserver init --dir /srv/pkb-k --endpoint https://k.example:7490 --pir-bits 15`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := kserver.Init(dir, kserver.InitOptions{Endpoint: endpoint, Hosts: hosts, PIR: tab}); err != nil {
				return err
			}
			rc := filepath.Join(dir, kserver.FileRelayCred)
			fmt.Fprintf(cmd.OutOrStdout(), "initialized K-server in %s; relay credential %s\nnext: veil peekaboo kserver serve --dir %s --listen %s, and give %s to the V-server's operator (veil peekaboo vserver init --relay-cred FILE)\n",
				dir, rc, dir, listenFor(endpoint), rc)
			return nil
		},
	}
	initC.Flags().StringVar(&endpoint, "endpoint", "", "the https:// URL the V-server reaches this K-server at (required)")
	initC.Flags().IntVar(&tab.Bits, "pir-bits", pir.DefaultParams.Bits, "private-query table: log2 of the number of buckets")
	initC.Flags().IntVar(&tab.Slots, "pir-slots", pir.DefaultParams.Slots, "private-query table: slots per bucket")
	initC.Flags().StringSliceVar(&hosts, "host", nil, "DNS name or IP for the certificate (repeatable; default 127.0.0.1, localhost; --endpoint's host is added)")
	serve := &cobra.Command{
		Use:   "serve --dir DIR [--listen ADDR]",
		Short: "Serve relay batches from the V-server (mutual TLS), /healthz and /metrics",
		Long: `serve answers the V-server's relay batches until SIGTERM or Ctrl-C, then drains.

  veil peekaboo kserver serve --dir /srv/pkb-k --listen 0.0.0.0:7490`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = pkbLogger()
			s, err := kserver.Open(dir, cfg)
			if err != nil {
				return err
			}
			return serveOne(cmd, s, listen)
		},
	}
	kdef := kserver.DefaultConfig()
	serve.Flags().StringVar(&listen, "listen", kserver.DefaultListen, "listen address")
	serve.Flags().DurationVar(&cfg.ReplayWindow, "replay-window", kdef.ReplayWindow, "how far behind this server's clock a query may be stamped, and how long its nonce is remembered (a query stamped over 30 s ahead is refused)")
	serve.Flags().Int64Var(&cfg.MaxBody, "max-body", kdef.MaxBody, "largest relay batch in bytes")
	serve.Flags().IntVar(&cfg.MaxConns, "max-conns", kdef.MaxConns, "simultaneous connections")
	serve.Flags().IntVar(&cfg.Workers, "workers", kdef.Workers, "relay items opened in parallel")
	serve.Flags().DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", kdef.ShutdownTimeout, "graceful drain limit")
	pub := &cobra.Command{
		Use:   "pubkey --dir DIR",
		Short: "Print the K-server's public key fingerprint (clients check it out of band)",
		Long: `pubkey prints the fingerprint of the K-server's public key, and the key itself. Users see
the fingerprint their credential pins when they run 'veil peekaboo join'; publish this one
where they can compare it (a V-server that handed out credentials pinning another key could
read their queries).

  veil peekaboo kserver pubkey --dir /srv/pkb-k`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(filepath.Join(dir, kserver.FilePub))
			if err != nil {
				return err
			}
			p, err := wire.ParseKServerPub(b)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "fingerprint %s\nkey %s\n", p.Fingerprint(), base64.StdEncoding.EncodeToString(b))
			return nil
		},
	}
	cert := newCertCommand(certKind{cmd: "veil peekaboo kserver cert", dir: "/srv/pkb-k", host: "k2.example",
		validity: kserver.ServerCertValidity}, &dir)
	for _, s := range []*cobra.Command{initC, serve, pub, cert} {
		s.Flags().StringVar(&dir, "dir", "", "the K-server's directory (required)")
		s.MarkFlagRequired("dir")
	}
	initC.MarkFlagRequired("endpoint")
	c.AddCommand(initC, serve, pub, cert)
	return c
}

// listenFor is the --listen address that serves endpoint (https://HOST:PORT): HOST:PORT
// for an IP address, else every address on PORT. The servers' default listen addresses
// have their own ports, so an init whose endpoint names another port must say which.
func listenFor(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return "ADDR"
	}
	if net.ParseIP(u.Hostname()) != nil {
		return u.Host
	}
	return ":" + u.Port()
}

// serveOne serves one opened server until the command's context ends.
func serveOne(cmd *cobra.Command, s server.Server, listen string) error {
	ls, err := server.Listen(listen, "")
	if err != nil {
		s.Close()
		return err
	}
	var g server.Group
	g.Add("serve", s, ls)
	err = g.Serve(cmd.Context())
	return joinErr(err, g.Close())
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func newPkbVServerCommand() *cobra.Command {
	c := &cobra.Command{Use: "vserver", Short: "Run Peekaboo's V-server (values, owners, clients; never keys or queries)",
		Long: `vserver runs Peekaboo's V-server, the half that holds values, owners and users, and
relays sealed queries and keys to the K-server. It starts from the K-server's relay.cred
(see 'veil peekaboo kserver --help' for the whole deployment):

  veil peekaboo vserver init --dir /srv/pkb-v --relay-cred relay.cred --endpoint https://v.example:7491 --host v.example
  veil peekaboo vserver serve --dir /srv/pkb-v --listen :7491
  veil peekaboo vserver adduser alice --admin-cred /srv/pkb-v/admin.cred --out alice.pkb`}
	var dir, endpoint, relay, listen string
	var hosts []string
	var cfg vserver.Config
	initC := &cobra.Command{
		Use:   "init --dir DIR --relay-cred FILE --endpoint https://HOST:PORT",
		Short: "Create a V-server: CA, TLS certificate, state, administrator credential",
		Long: `init creates a V-server in DIR from the K-server's relay credential: a CA and server
certificate for clients, the state file and DIR/admin.cred (to add users).

  veil peekaboo vserver init --dir /srv/pkb-v --relay-cred relay.cred --endpoint https://v.example:7491`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := os.ReadFile(relay)
			if err != nil {
				return err
			}
			if err := vserver.Init(dir, vserver.InitOptions{RelayCred: rc, Endpoint: endpoint, Hosts: hosts}); err != nil {
				return err
			}
			ac := filepath.Join(dir, vserver.FileAdminCred)
			fmt.Fprintf(cmd.OutOrStdout(), "initialized V-server in %s; administrator credential %s\nnext: veil peekaboo vserver serve --dir %s --listen %s, then add users: veil peekaboo vserver adduser NAME --admin-cred %s --out NAME.pkb\n",
				dir, ac, dir, listenFor(endpoint), ac)
			return nil
		},
	}
	initC.Flags().StringVar(&relay, "relay-cred", "", "the K-server's relay.cred (required)")
	initC.Flags().StringVar(&endpoint, "endpoint", "", "the https:// URL owners and clients reach this V-server at (required)")
	initC.Flags().StringSliceVar(&hosts, "host", nil, "DNS name or IP for the certificate (repeatable; default 127.0.0.1, localhost; --endpoint's host is added)")
	initC.MarkFlagRequired("relay-cred")
	initC.MarkFlagRequired("endpoint")
	serve := &cobra.Command{
		Use:   "serve --dir DIR [--listen ADDR] [--batch-size N] [--max-delay D]",
		Short: "Serve owners and clients; relay to the K-server in mixed batches",
		Long: `serve answers owners and clients until SIGTERM or Ctrl-C, then drains. Requests for the
K-server leave in shuffled batches of --batch-size, or --max-delay after the first (1 turns
mixing off).

  veil peekaboo vserver serve --dir /srv/pkb-v --listen 0.0.0.0:7491 --batch-size 32 --max-delay 20ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = pkbLogger()
			s, err := vserver.Open(dir, cfg)
			if err != nil {
				return err
			}
			return serveOne(cmd, s, listen)
		},
	}
	vdef := vserver.DefaultConfig()
	serve.Flags().StringVar(&listen, "listen", vserver.DefaultListen, "listen address")
	serve.Flags().IntVar(&cfg.BatchSize, "batch-size", vdef.BatchSize, "relay items per mixed batch (1: no mixing)")
	serve.Flags().DurationVar(&cfg.MaxDelay, "max-delay", vdef.MaxDelay, "longest wait for a batch to fill")
	serve.Flags().Int64Var(&cfg.MaxBody, "max-body", vdef.MaxBody, "largest request body in bytes")
	serve.Flags().IntVar(&cfg.MaxConns, "max-conns", vdef.MaxConns, "simultaneous client connections")
	serve.Flags().DurationVar(&cfg.RelayTimeout, "relay-timeout", vdef.RelayTimeout, "one relay batch to the K-server")
	serve.Flags().DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", vdef.ShutdownTimeout, "graceful drain limit")
	cert := newCertCommand(certKind{cmd: "veil peekaboo vserver cert", dir: "/srv/pkb-v", host: "v2.example",
		validity: vserver.ServerCertValidity}, &dir)
	for _, s := range []*cobra.Command{initC, serve, cert} {
		s.Flags().StringVar(&dir, "dir", "", "the V-server's directory (required)")
		s.MarkFlagRequired("dir")
	}
	c.AddCommand(initC, serve, cert, newPkbAddUserCommand())
	return c
}

func newPkbAddUserCommand() *cobra.Command {
	var adminCred, out string
	add := &cobra.Command{
		Use:   "adduser NAME --admin-cred FILE [--out FILE]",
		Short: "Register a user with the running V-server and print (or write) their credential",
		Long: `adduser asks the running V-server (with its administrator credential) to register NAME
and prints the user's credential; the user stores it with 'veil peekaboo join FILE'.

  veil peekaboo vserver adduser alice --admin-cred /srv/pkb-v/admin.cred --out alice.pkb`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ac, err := os.ReadFile(adminCred)
			if err != nil {
				return err
			}
			cred, err := client.AddUser(cmd.Context(), ac, args[0])
			if err != nil {
				return err
			}
			if out == "" {
				_, err = cmd.OutOrStdout().Write(cred)
				return err
			}
			if err := atomicfile.Write(out, cred, 0o600, true); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registered %s; credential in %s: give it to them (privately: it is their password), they run 'veil peekaboo join %s'\n", args[0], out, filepath.Base(out))
			return nil
		},
	}
	add.Flags().StringVar(&adminCred, "admin-cred", "", "the V-server's admin.cred (required)")
	add.Flags().StringVar(&out, "out", "", "write the credential to this file (mode 0600) instead of printing it")
	add.MarkFlagRequired("admin-cred")
	return add
}
