package vserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// Config configures a running V-server. Zero values take the documented defaults.
type Config struct {
	BatchSize       int           // relay items per mixed batch (default 16; 1 = no mixing)
	MaxDelay        time.Duration // longest wait for a batch to fill (default 5ms)
	MaxBody         int64         // largest request body (default 32 MiB)
	MaxConns        int           // simultaneous client connections (default 4096)
	RelayTimeout    time.Duration // one relay batch to the K-server (default 60s)
	ReadTimeout     time.Duration // default 60s
	IdleTimeout     time.Duration // default 2m
	ShutdownTimeout time.Duration // graceful drain limit (default 30s)
	Logger          *slog.Logger  // default: discard
	// TestTap, when set, is given every byte the server receives: each request's headers
	// and body, and each relay reply from the K-server. Tests read it. Not for production.
	TestTap func(where string, data []byte)
}

func (c *Config) defaults() {
	def(&c.BatchSize, 16)
	def(&c.MaxDelay, 5*time.Millisecond)
	def(&c.MaxBody, 32<<20)
	def(&c.MaxConns, 4096)
	def(&c.RelayTimeout, time.Minute)
	def(&c.ReadTimeout, time.Minute)
	def(&c.IdleTimeout, 2*time.Minute)
	def(&c.ShutdownTimeout, 30*time.Second)
}

// DefaultListen is the V-server's listen address unless told otherwise.
const DefaultListen = "127.0.0.1:7491"

// DefaultConfig is the configuration zero values stand for (the CLI's flag defaults).
func DefaultConfig() Config {
	var c Config
	c.defaults()
	return c
}

func def[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Server is an opened V-server.
type Server struct {
	cfg      Config
	log      *slog.Logger
	db       *bbolt.DB
	tls      *tls.Config
	relayURL string
	kkey     string // the K-server public key, base64, as in credentials
	endpoint string
	caPEM    string
	http     *http.Client
	mix      *mixer
	m        *metrics
	usersMu  sync.RWMutex
	users    map[string]wire.UserRecord
	table    *pir.Table // replica of the private-query table (nil: off)
	syncReq  chan struct{}
	settle   *settler // pairs the K-server never acknowledged (settle.go)
}

// Open loads dir (made by Init) and prepares the relay to the K-server.
func Open(dir string, cfg Config) (*Server, error) {
	cfg.defaults()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return b
	}
	rcb := read(FileRelayCred)
	if rcb == nil {
		return nil, fmt.Errorf("%s is not a V-server directory (run veil peekaboo vserver init)", dir)
	}
	rc, _, err := wire.ParseRelayCred(rcb)
	if err != nil {
		return nil, err
	}
	sc, err := pki.LoadServerCert(filepath.Join(dir, FileCert), filepath.Join(dir, FileCertKey), "veil peekaboo vserver cert --dir "+dir)
	if err != nil {
		return nil, err
	}
	tc, err := tlsconf.ServerConfigFunc(sc.GetCertificate, nil)
	if err != nil {
		return nil, err
	}
	ctc, err := tlsconf.ClientConfig([]byte(rc.CA), &tlsconf.Pair{Cert: []byte(rc.Cert), Key: []byte(rc.Key)})
	if err != nil {
		return nil, fmt.Errorf("relay credential: %w", err)
	}
	admin, _, err := wire.ParseUserCred(read(FileAdminCred))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileAdminCred, err)
	}
	db, err := openDB(filepath.Join(dir, FileDB))
	if err != nil {
		return nil, err
	}
	users, err := loadUsers(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	table, err := openTable(rc, db)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Server{table: table, syncReq: make(chan struct{}, 1), settle: newSettler(), cfg: cfg, log: server.Logger(cfg.Logger, "peekaboo-vserver"), db: db, tls: tc, users: users,
		relayURL: strings.TrimSuffix(rc.Endpoint, "/") + "/v1/relay", kkey: rc.KServerKey,
		endpoint: admin.Endpoint, caPEM: string(read(FileCACert)), m: newMetrics(),
		http: &http.Client{Transport: &http.Transport{TLSClientConfig: ctc, ForceAttemptHTTP2: true,
			MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}}
	s.mix = newMixer(cfg.BatchSize, cfg.MaxDelay, s.relay, func(n int) { s.m.batch.Observe(float64(n)) })
	s.log.Info("v-server opened", "dir", dir, "users", len(users), "kserver", rc.Endpoint)
	return s, nil
}

// relay sends one mixed batch to the K-server.
func (s *Server) relay(ctx context.Context, items []wire.RelayItem) ([]wire.RelayResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RelayTimeout)
	defer cancel()
	body := (&wire.Relay{Items: items}).Marshal()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.relayURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	start := time.Now()
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, s.relayFailed(ctx, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, s.relayFailed(ctx, err)
	}
	s.m.relay.Observe(time.Since(start).Seconds())
	if s.cfg.TestTap != nil {
		s.cfg.TestTap("relay-reply", b)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: %s", errKServer, resp.Status, strings.TrimSpace(string(b)))
	}
	rr, err := wire.ParseRelayResp(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errKServer, err)
	}
	return rr.Results, nil
}

var errKServer = errors.New("k-server unavailable")

// relayFailed is a relay that got no (whole) answer, as the client is told: a K-server
// that took the relay's whole time (stopped, hung, overloaded) is said to have, in place
// of Go's "context deadline exceeded".
func (s *Server) relayFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return relayTimeout(s.cfg.RelayTimeout)
	}
	return fmt.Errorf("%w: %v", errKServer, err)
}

// relayTimeout is a relay the K-server did not answer within the relay timeout; it is
// errKServer (502).
type relayTimeout time.Duration

func (e relayTimeout) Error() string {
	return fmt.Sprintf("the K-server did not answer within %gs (the V-server's --relay-timeout): it is stopped, hung or overloaded; try again later", time.Duration(e).Seconds())
}

func (e relayTimeout) Is(target error) bool { return target == errKServer }

// Serve answers on ls.HTTP (TLS) until ctx is cancelled, then drains in-flight requests.
func (s *Server) Serve(ctx context.Context, ls server.Listeners) error {
	srv := &http.Server{Handler: s.Handler(), TLSConfig: s.tls, ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.log.Info("serving", "addr", ls.Addr())
	syncCtx, stopSync := context.WithCancel(ctx)
	synced, settled := make(chan struct{}), make(chan struct{})
	go func() { defer close(synced); s.syncLoop(syncCtx) }()
	go func() { defer close(settled); s.settleLoop(syncCtx) }()
	// Idle keep-alive connections give up their slot when all are taken (server.Limiter).
	err := server.ServeHTTP(ctx, srv, server.Limit(srv, ls.HTTP, s.cfg.MaxConns), s.cfg.ShutdownTimeout)
	stopSync()
	<-synced
	<-settled
	s.log.Info("stopped", "err", err)
	return err
}

// Close stops the mixer and closes the state file.
func (s *Server) Close() error {
	s.mix.close()
	s.http.CloseIdleConnections()
	return s.db.Close()
}
