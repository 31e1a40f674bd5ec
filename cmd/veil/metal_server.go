package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/segment"
	mserver "github.com/veil-project/veil/internal/metal/server"
)

func newMetalServerCommand() *cobra.Command {
	c := &cobra.Command{Use: "server", Short: "Run one of Metal's two servers"}
	var dir, endpoint, peerCred, listen string
	var role int
	var hosts []string
	p := access.DefaultParams
	initC := &cobra.Command{
		Use:   "init --role 1|2 --dir DIR --endpoint https://HOST:PORT",
		Short: "Create a Metal server: CA, TLS certificate, fresh 2PC key shares, empty ORAM",
		Long: `init creates Server 2 first (it fixes the deployment's parameters and writes
DIR/peer.cred for Server 1's operator), then Server 1 from that file (it writes
DIR/deployment.json for clients: 'veil metal join').

  veil metal server init --role 2 --dir /srv/metal2 --endpoint https://127.0.0.1:7602
  veil metal server init --role 1 --dir /srv/metal1 --endpoint https://127.0.0.1:7601 --peer-cred /srv/metal2/peer.cred`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := metalBlockFits(role == 2, p.BlockSize); err != nil {
				return err
			}
			o := mserver.InitOptions{Role: role, Endpoint: endpoint, Hosts: hosts, Params: p}
			if role == 1 {
				b, err := os.ReadFile(peerCred)
				if err != nil {
					return fmt.Errorf("--peer-cred: %w", err)
				}
				o.PeerCred = b
			}
			if err := mserver.Init(dir, o); err != nil {
				return err
			}
			out := filepath.Join(dir, mserver.FilePeerCred)
			if role == 1 {
				out = filepath.Join(dir, mserver.FileDeployment)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "initialized Metal server %d in %s; hand out %s\n", role, dir, out)
			return nil
		},
	}
	initC.Flags().IntVar(&role, "role", 0, "1 (garbler, holds DataORAM) or 2 (required)")
	initC.Flags().StringVar(&endpoint, "endpoint", "", "the https:// URL clients (and Server 1) reach this server at (required)")
	initC.Flags().StringVar(&peerCred, "peer-cred", "", "Server 2's peer.cred (role 1)")
	initC.Flags().StringSliceVar(&hosts, "host", nil, "DNS name or IP for the certificate (repeatable; default 127.0.0.1, localhost)")
	initC.Flags().IntVar(&p.D, "files-log2", p.D, "role 2: 2^N file ids, N <= 20 (recursive position map)")
	initC.Flags().IntVar(&p.BlockSize, "block-size", p.BlockSize, "role 2: bytes per block (file id), a multiple of 16, at least 48")
	initC.Flags().IntVar(&p.Stash, "stash", p.Stash, "role 2: ORAM stash bound")
	initC.Flags().Uint32Var(&p.FilesPerAccount, "files-per-account", p.FilesPerAccount, "role 2: file ids per account")
	initC.MarkFlagRequired("role")
	initC.MarkFlagRequired("endpoint")
	var cfg mserver.Config
	serve := &cobra.Command{
		Use:   "serve --dir DIR [--listen ADDR]",
		Short: "Serve clients and keep the 2PC link to the other server; /healthz, /metrics",
		Long: `serve answers clients until SIGTERM or Ctrl-C, then drains. Server 1 dials Server 2
(mutual TLS) and keeps that link up; start them in either order.

  veil metal server serve --dir /srv/metal2 --listen 127.0.0.1:7602
  veil metal server serve --dir /srv/metal1 --listen 127.0.0.1:7601`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Logger = pkbLogger()
			s, err := mserver.Open(dir, cfg)
			if err != nil {
				return err
			}
			return serveOne(cmd, s, listen)
		},
	}
	serve.Flags().StringVar(&listen, "listen", "127.0.0.1:7601", "listen address")
	serve.Flags().DurationVar(&cfg.PairTimeout, "pair-timeout", 30*time.Second, "how long a call waits for the client's other part (role 1: to reach Server 2; role 2: to be announced by Server 1, counted while no call runs and no link is being set up)")
	serve.Flags().DurationVar(&cfg.CallTimeout, "call-timeout", 5*time.Minute, "a request's wait for its turn and its call")
	serve.Flags().DurationVar(&cfg.SilenceTimeout, "silence-timeout", 10*time.Second, "role 1: cut the 2PC link (failing the call in progress, answering the requests queued behind it) when Server 2 echoes nothing on the liveness probe for this long; a busy Server 2 echoes")
	serve.Flags().IntVar(&cfg.MaxConns, "max-conns", 256, "simultaneous client connections (requests waiting for their other part hold at most half of them)")
	serve.Flags().IntVar(&cfg.MaxWaitingPerAddr, "max-waiting-per-address", 32, "requests of one client address (IPv6: one /64) waiting at once; more are refused with 429 (raise it behind a shared address: NAT, Tor exit)")
	serve.Flags().IntVar(&cfg.MaxWaitingPerSite, "max-waiting-per-site", 0, "requests of all the /64s of one IPv6 /48 (one site) waiting at once; more are refused with 429; IPv4 addresses have only the per-address bound (default 64, or --max-waiting-per-address if larger)")
	serve.Flags().DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "graceful drain limit")
	serve.Flags().DurationVar(&cfg.ShareEpoch, "share-epoch", 0, "role 1: broadcast-list epoch; a download closes and shuffles the open epoch once it is this old (0: every download)")
	serve.Flags().DurationVar(&cfg.ShareRetention, "share-retention", 72*time.Hour, "role 1: closed broadcast-list epochs are deleted after this")
	serve.Flags().DurationVar(&cfg.StallTimeout, "stall-timeout", time.Minute, "role 1: a broadcast-list download whose client takes nothing for this long is cut (one that keeps reading is never cut, however long it takes)")
	c.PersistentFlags().StringVar(&dir, "dir", "", "server directory (required)")
	c.MarkPersistentFlagRequired("dir")
	cert := newCertCommand(certKind{cmd: "veil metal server cert", dir: "/srv/metal1", host: "metal1.example.org",
		validity: mserver.ServerCertValidity}, &dir)
	c.AddCommand(initC, serve, cert)
	return c
}

// metalBlockFits refuses (when check is set) a block too small for the client's segment
// header (docs/formats/metal-segment.md): such a deployment could store no file.
func metalBlockFits(check bool, blockSize int) error {
	if check && blockSize < segment.MinBlockSize {
		return fmt.Errorf("block size %d: veil's clients need at least %d bytes per block (a %d-byte segment header and some content)", blockSize, segment.MinBlockSize, segment.HeaderLen)
	}
	return nil
}
