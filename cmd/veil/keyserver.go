package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/veil-project/veil/internal/bench/ks"
	"github.com/veil-project/veil/internal/keyserver"
)

func init() {
	register(newKeyserverCommand)
	registerBench(newBenchKSCommand)
}

func newKeyserverCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "keyserver",
		Short: "Run DupLESS's key server: oblivious, verifiable, rate-limited key derivation",
		Long: `The key server (KS) turns a file's hash into its encryption key without learning the hash:
clients blind H(M), the KS evaluates an oblivious PRF with its secret key, the client checks
the answer against the KS public key and unblinds it. Brute-forcing a predictable file then
has to go through the KS, which rate-limits every client.

A typical deployment:

  veil keyserver init --dir /srv/ks --host ks.example.org --url https://ks.example.org:7443 --udp ks.example.org:7444
  veil keyserver client add alice --dir /srv/ks --out alice.ks.json
  veil keyserver serve --dir /srv/ks --https :7443 --udp :7444

Give alice.ks.json to alice (it holds her client certificate and the pinned KS keys).`,
	}
	c.AddCommand(newKSInit(), newKSClient(), newKSRotate(), newKSServe(), newKSRateTable(), newKSCert())
	return c
}

func ksDirFlag(c *cobra.Command, dir *string) {
	c.Flags().StringVar(dir, "dir", "", "key server directory (required)")
	c.MarkFlagRequired("dir")
}

func newKSCert() *cobra.Command {
	var dir string
	c := newCertCommand(certKind{cmd: "veil keyserver cert", dir: "/srv/ks", host: "ks3.example.org",
		validity: keyserver.ServerCertValidity, copies: "every replica's copy of DIR"}, &dir)
	ksDirFlag(c, &dir)
	return c
}

func newKSInit() *cobra.Command {
	var dir string
	var o keyserver.InitOptions
	c := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Create a key server: first OPRF key, private CA, server certificate",
		Long: `init creates a key server directory: the first OPRF key (with its key id), a private
certificate authority that issues client credentials, and the server's TLS certificate for
the given host names. The URL and UDP address are written into every credential issued later
(a client can override them).

Suites: ristretto255 (default; RFC 9497 verifiable OPRF, batched proofs) or rsa (RFC 9474
blind RSA signatures, the paper's construction; slower).

Examples:
  veil keyserver init --dir ks
  veil keyserver init --dir ks --suite rsa --rsa-bits 3072
  veil keyserver init --dir ks --host ks.example.org --url https://ks.example.org:7443 --udp ks.example.org:7444`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Clients verify the certificate for the URL's host: it must be named (found by
			// review: --url without a matching --host made a key server no client accepted).
			if u, err := url.Parse(o.URL); err == nil && u.Hostname() != "" && !slices.Contains(o.Hosts, u.Hostname()) {
				o.Hosts = append(slices.Clone(o.Hosts), u.Hostname())
			}
			if err := keyserver.Init(dir, o); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "initialized key server in %s\n", dir)
			return nil
		},
	}
	f := c.Flags()
	ksDirFlag(c, &dir)
	d := keyserver.DefaultConfig()
	f.StringVar(&o.Suite, "suite", keyserver.DefaultSuite, "OPRF suite: ristretto255 or rsa")
	f.IntVar(&o.RSABits, "rsa-bits", keyserver.DefaultRSABits, fmt.Sprintf("RSA modulus size for --suite rsa (at least %d)", keyserver.DefaultRSABits))
	f.StringSliceVar(&o.Hosts, "host", keyserver.DefaultHosts, "host names/IPs for the server certificate (--url's host is added)")
	f.StringVar(&o.URL, "url", "", "HTTPS URL clients use (default https://"+d.HTTPSAddr+")")
	f.StringVar(&o.UDP, "udp", "", "UDP address clients use (default "+d.UDPAddr+"; '-' for none)")
	return c
}

func newKSClient() *cobra.Command {
	c := &cobra.Command{Use: "client", Short: "Issue, list and revoke client credentials"}
	var dir, out string
	var o keyserver.AddOptions
	add := &cobra.Command{
		Use:   "add NAME --dir DIR --out FILE",
		Short: "Issue a client credential file",
		Long: `add issues a client certificate from the key server's CA and writes ONE credential file
holding everything the client needs: its certificate and key, the CA certificate, the suite,
the pinned KS public keys with their ids, and the KS addresses. Keep it secret: whoever holds
it queries the KS under this client's rate limit.

Example:
  veil keyserver client add alice --dir ks --out alice.ks.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "-" {
				b, err := keyserver.AddClient(dir, args[0], o)
				if err == nil {
					_, err = cmd.OutOrStdout().Write(b)
				}
				return err
			}
			return keyserver.AddClientFile(dir, args[0], out, o)
		},
	}
	ksDirFlag(add, &dir)
	add.Flags().StringVar(&out, "out", "", "credential file to write, or - for stdout (required)")
	add.MarkFlagRequired("out")
	add.Flags().StringVar(&o.URL, "url", "", "HTTPS URL to record (default: the one given at init)")
	add.Flags().StringVar(&o.UDP, "udp", "", "UDP address to record (default: the one given at init)")
	add.Flags().DurationVar(&o.Validity, "valid", keyserver.DefaultValidity, "certificate lifetime")

	var jsonOut bool
	list := &cobra.Command{
		Use:   "list --dir DIR",
		Short: "List clients and whether they are revoked",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cs, err := keyserver.ListClients(dir)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(cs)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tADDED\tEXPIRES\tSTATUS")
			for _, c := range cs {
				st := "active"
				if c.Revoked != nil {
					st = "revoked " + c.Revoked.Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Name, c.Added.Format(time.DateOnly), c.Expires.Format(time.DateOnly), st)
			}
			return tw.Flush()
		},
	}
	ksDirFlag(list, &dir)
	list.Flags().BoolVar(&jsonOut, "json", false, "print JSON")

	revoke := &cobra.Command{
		Use:   "revoke NAME --dir DIR",
		Short: "Revoke a client: a running server refuses it within a second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return keyserver.RevokeClient(dir, args[0])
		},
	}
	ksDirFlag(revoke, &dir)
	c.AddCommand(add, list, revoke)
	return c
}

func newKSRotate() *cobra.Command {
	var dir string
	var bits int
	c := &cobra.Command{
		Use:   "rotate --dir DIR",
		Short: "Add a new key and make it current; old keys keep answering",
		Long: `rotate generates a new OPRF key with a new key id and makes it the key new credentials
use. Old keys stay in the ring and keep answering, so data whose key records name them can
still be derived. A running server picks the change up within a second.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			id, err := keyserver.Rotate(dir, bits)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "new current key %s\n", id)
			return nil
		},
	}
	ksDirFlag(c, &dir)
	c.Flags().IntVar(&bits, "rsa-bits", keyserver.DefaultRSABits, "RSA modulus size (rsa suite)")
	return c
}

func rateFlags(f *pflag.FlagSet, rl *keyserver.RateLimit) {
	d := keyserver.DefaultRateLimit()
	f.StringVar(&rl.Mode, "ratelimit", d.Mode, "rate-limit mechanism: bounded, fixed, exp or none")
	f.Int64Var(&rl.Q, "ratelimit-q", d.Q, "bounded: evaluations per client per epoch")
	f.DurationVar(&rl.Epoch, "ratelimit-epoch", d.Epoch, "epoch t_E (bounded; exp resets after an idle epoch)")
	f.DurationVar(&rl.Delay, "ratelimit-delay", d.Delay, "fixed: delay t_D per evaluation")
	f.DurationVar(&rl.Start, "ratelimit-start", d.Start, "exp: first delay")
	f.DurationVar(&rl.Max, "ratelimit-max", d.Max, "exp: upper limit t_U")
}

func newKSServe() *cobra.Command {
	var dir, level string
	var cfg keyserver.Config
	c := &cobra.Command{
		Use:   "serve --dir DIR",
		Short: "Serve key derivations over HTTPS and UDP until SIGTERM",
		Long: `serve answers blinded key-derivation requests from clients holding credentials issued by
'client add': POST /v1/evaluate (one request, many blinded inputs, one proof), POST
/v1/session (opens a UDP session), GET /healthz and GET /metrics (Prometheus) on the HTTPS
address; session datagrams on the UDP address. Logs are JSON on stderr.

Rate limits are per client, across all its connections and sessions, counted in evaluations.
Defaults are the paper's NetApp numbers (bounded, 825,000 per week). State is kept in
DIR/ratelimit.db, or in Redis with --ratelimit-store so several replicas share it. While
that store does not answer, every evaluation is refused (503 over HTTPS, dropped over
UDP) and logged as a warning at most once per 10 s.

Examples:
  veil keyserver serve --dir ks
  veil keyserver serve --dir ks --https :7443 --udp :7444 --ratelimit fixed --ratelimit-delay 730ms
  veil keyserver serve --dir ks --ratelimit-store redis://10.0.0.5:6379/0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if cfg.Logger, err = serverLogger(cmd, level); err != nil {
				return err
			}
			return keyserver.ListenAndServe(cmd.Context(), dir, cfg)
		},
	}
	f := c.Flags()
	ksDirFlag(c, &dir)
	d := keyserver.DefaultConfig()
	f.StringVar(&cfg.HTTPSAddr, "https", d.HTTPSAddr, "HTTPS listen address")
	f.StringVar(&cfg.UDPAddr, "udp", d.UDPAddr, "UDP listen address ('-' for none)")
	rateFlags(f, &cfg.RateLimit)
	f.StringVar(&cfg.RateLimitStore, "ratelimit-store", "", "shared rate-limit state: redis://host:port/db (default: DIR/ratelimit.db)")
	f.IntVar(&cfg.MaxBatch, "max-batch", d.MaxBatch, "most blinded inputs per request")
	f.Int64Var(&cfg.MaxBody, "max-body", d.MaxBody, "largest HTTPS request body in bytes")
	f.IntVar(&cfg.MaxDatagram, "max-datagram", d.MaxDatagram, "largest UDP datagram in bytes (at most 65507)")
	f.IntVar(&cfg.MaxSessions, "max-sessions", d.MaxSessions, "most open UDP sessions")
	f.IntVar(&cfg.MaxClientSess, "max-client-sessions", d.MaxClientSess, "most open UDP sessions per client")
	f.IntVar(&cfg.MaxConns, "max-conns", d.MaxConns, "most simultaneous HTTPS connections")
	f.DurationVar(&cfg.SessionTTL, "session-ttl", d.SessionTTL, "UDP session lifetime")
	f.DurationVar(&cfg.SessionIdle, "session-idle", d.SessionIdle, "a UDP session unused this long ends (frees the client's slot)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", d.IdleTimeout, "keep-alive idle timeout")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, "graceful drain limit on SIGTERM")
	f.IntVar(&cfg.UDPWorkers, "udp-workers", d.UDPWorkers, "UDP reader goroutines")
	logLevelFlag(f, &level)
	return c
}

func newKSRateTable() *cobra.Command {
	var rl keyserver.RateLimit
	var unlimited float64
	var jsonOut bool
	c := &cobra.Command{
		Use:   "ratelimit-table",
		Short: "Print the attacker's brute-force rate per rate-limit mechanism (paper Fig. 2)",
		Long: `ratelimit-table prints, for each rate-limit mechanism, the fastest rate (queries per
second) at which an attacker holding one client credential can brute-force through the key
server, for the parameters given (same flags as serve) and for the paper's NetApp scenario
(q = 825,000/week, t_D = t_U = 730 ms), with the paper's figures beside them.

Example:
  veil keyserver ratelimit-table --ratelimit-q 100000 --ratelimit-epoch 24h --ratelimit-delay 100ms`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows := keyserver.RateTable(rl, unlimited)
			if jsonOut {
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, r := range rows {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "MECHANISM\tFORMULA\tCONFIGURED q/s\tNETAPP q/s\tPAPER (NetApp)")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Mechanism, r.Formula, num(r.Configured), num(r.NetApp), r.Paper)
			}
			return tw.Flush()
		},
	}
	rateFlags(c.Flags(), &rl)
	c.Flags().Float64Var(&unlimited, "unlimited-rate", 3200, "measured rate of an unlimited key server (the None row)")
	c.Flags().BoolVar(&jsonOut, "json", false, "print JSON lines")
	return c
}

func num(v float64) string {
	if v == 0 {
		return "-"
	}
	if v >= 100 {
		return strings.TrimSuffix(fmt.Sprintf("%.0f", v), ".")
	}
	return fmt.Sprintf("%.2f", v)
}

func newBenchKSCommand() *cobra.Command {
	var o ksbench.Options
	var cred string
	var jsonOut bool
	c := &cobra.Command{
		Use:   "ks --cred FILE",
		Short: "Load-test a key server (requests/s, evaluations/s, latency, drops)",
		Long: `bench ks drives a running key server with pre-computed blinded requests, so the load
generator's CPU goes to sending, and prints requests/s, evaluations/s, p50/p99 latency,
errors and drops. --static requests /healthz instead (the paper's static-page baseline).
--rate sends UDP datagrams open-loop at a fixed rate (the paper's Fig. 4). --verify checks
and unblinds every answer (then the figure is verified derivations/s, client CPU included).

Start a server with no rate limit first:
  veil keyserver serve --dir ks --ratelimit none &
  veil keyserver client add bench --dir ks --out bench.ks.json

Examples:
  veil bench ks --cred bench.ks.json --transport https --batch 64 --concurrency 4 --duration 10s
  veil bench ks --cred bench.ks.json --static --concurrency 4
  veil bench ks --cred bench.ks.json --transport udp --rate 3000 --duration 10s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := os.ReadFile(cred)
			if err != nil {
				return err
			}
			o.Credential = b
			r, err := ksbench.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
			}
			what := "evaluate"
			if r.Static {
				what = "healthz"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s batch=%d c=%d: %.0f req/s, %.0f eval/s, p50 %.2f ms, p99 %.2f ms, %s, %s (%.2f%%)\n",
				r.Transport, what, r.Batch, r.Concurrency, r.ReqPerSec, r.EvalPerSec, r.P50ms, r.P99ms,
				plural(int(r.Errors), "error", "errors"), plural(int(r.Drops), "drop", "drops"), r.DropPct)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&cred, "cred", "", "credential file from 'veil keyserver client add' (required)")
	c.MarkFlagRequired("cred")
	f.StringVar(&o.URL, "addr", "", "key server HTTPS address override: host:port or https://host:port")
	f.StringVar(&o.UDPAddr, "udp-addr", "", "UDP address override")
	d := ksbench.DefaultOptions()
	f.StringVar(&o.Transport, "transport", d.Transport, "https or udp")
	f.IntVar(&o.Batch, "batch", d.Batch, "blinded inputs per request")
	f.IntVar(&o.Concurrency, "concurrency", d.Concurrency, "closed-loop workers")
	f.DurationVar(&o.Duration, "duration", d.Duration, "how long to measure")
	f.IntVar(&o.Rate, "rate", 0, "udp: open-loop requests per second (0: closed loop)")
	f.BoolVar(&o.Static, "static", false, "request /healthz instead (baseline)")
	f.BoolVar(&o.Verify, "verify", false, "verify and unblind every answer")
	f.BoolVar(&o.HTTP2, "http2", false, "one multiplexed HTTP/2 connection instead of HTTP/1.1 keep-alive")
	f.DurationVar(&o.Timeout, "timeout", d.Timeout, "per-request timeout; an unanswered UDP request counts as a drop")
	f.BoolVar(&jsonOut, "json", false, "print one JSON line")
	return c
}
