package kserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/veil-project/veil/internal/ratelog"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// Config configures a running K-server. Zero values take the documented defaults.
type Config struct {
	ReplayWindow    time.Duration // how far behind this clock a query may be stamped, and how long its nonce is remembered (default 10m; ahead: at most wire.MaxAhead)
	MaxBody         int64         // largest relay batch (default 64 MiB)
	MaxConns        int           // simultaneous connections (default 1024)
	Workers         int           // relay items opened in parallel (default 4)
	ReadTimeout     time.Duration // default 60s
	IdleTimeout     time.Duration // default 2m
	ShutdownTimeout time.Duration // graceful drain limit (default 30s)
	Logger          *slog.Logger  // default: discard
	// TestTap, when set, is given every request the server receives (headers and body):
	// the tests that check what the K-server learns read it. Not for production.
	TestTap func(r *http.Request, body []byte)
	now     func() time.Time
}

func (c *Config) defaults() {
	def(&c.ReplayWindow, 10*time.Minute)
	def(&c.MaxBody, 64<<20)
	def(&c.MaxConns, 1024)
	def(&c.Workers, 4)
	def(&c.ReadTimeout, time.Minute)
	def(&c.IdleTimeout, 2*time.Minute)
	def(&c.ShutdownTimeout, 30*time.Second)
	if c.now == nil {
		c.now = time.Now
	}
}

// DefaultListen is the K-server's listen address unless told otherwise.
const DefaultListen = "127.0.0.1:7490"

// DefaultConfig is the configuration zero values stand for (the CLI's flag defaults).
func DefaultConfig() Config {
	var c Config
	c.defaults()
	c.now = nil
	return c
}

func def[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Server is an opened K-server.
type Server struct {
	dir    string
	cfg    Config
	log    *slog.Logger
	key    *wire.KServerKey
	db     *bbolt.DB
	idx    *index.Index
	replay *replayCache
	table  *pir.Table // private-query table (nil: off)
	tls    *tls.Config
	m      *metrics

	refusals ratelog.Spacer // log lines of refused queries (fresh)
}

// Open loads dir (made by Init), rebuilds the index and prepares TLS.
func Open(dir string, cfg Config) (*Server, error) {
	cfg.defaults()
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
	kb, err := read(FileKey)
	if err != nil {
		return nil, fmt.Errorf("%s is not a K-server directory (run veil peekaboo kserver init): %w", dir, err)
	}
	key, err := wire.ParseKServerKey(kb)
	if err != nil {
		return nil, err
	}
	ca, err := read(FileCACert)
	if err != nil {
		return nil, err
	}
	sc, err := pki.LoadServerCert(filepath.Join(dir, FileCert), filepath.Join(dir, FileCertKey), "veil peekaboo kserver cert --dir "+dir)
	if err != nil {
		return nil, err
	}
	tc, err := tlsconf.ServerConfigFunc(sc.GetCertificate, ca)
	if err != nil {
		return nil, err
	}
	db, err := openDB(filepath.Join(dir, FileDB))
	if err != nil {
		return nil, err
	}
	others, err := othersWrote(db) // before any other transaction of this start
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", FileDB, err)
	}
	idx, err := load(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("load %s: %w", FileDB, err)
	}
	table, err := openTable(dir, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("private-query table: %w", err)
	}
	s := &Server{table: table, dir: dir, cfg: cfg, log: server.Logger(cfg.Logger, "peekaboo-kserver"), key: key, db: db, idx: idx,
		tls: tc, m: newMetrics()}
	if s.replay, err = s.openReplay(others); err != nil {
		db.Close()
		return nil, err
	}
	s.m.pairs.Set(float64(idx.Len()))
	s.log.Info("k-server opened", "dir", dir, "pairs", idx.Len())
	return s, nil
}

// Pairs is the number of pairs held.
func (s *Server) Pairs() int { return s.idx.Len() }

// Handler is the HTTP API: /healthz, /metrics, POST /v1/relay (client certificate required).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	server.Mount(mux, s.m.reg, nil)
	mux.HandleFunc("POST /v1/relay", s.handleRelay)
	return mux
}

// Serve answers on ls.HTTP (TLS) until ctx is cancelled, then drains in-flight requests.
func (s *Server) Serve(ctx context.Context, ls server.Listeners) error {
	srv := &http.Server{Handler: s.Handler(), TLSConfig: s.tls, ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	s.log.Info("serving", "addr", ls.Addr())
	// Idle keep-alive connections give up their slot when all are taken (server.Limiter).
	err := server.ServeHTTP(ctx, srv, server.Limit(srv, ls.HTTP, s.cfg.MaxConns), s.cfg.ShutdownTimeout)
	s.log.Info("stopped", "err", err)
	return err
}

// Close records the replay high-water mark of this run (so a restart refuses only what
// was answered) and closes the state file. Call it after Serve has returned.
func (s *Server) Close() error {
	err := s.replay.shutdown()
	if err != nil {
		err = fmt.Errorf("record the replay high-water mark: %w", err)
	}
	return errors.Join(err, s.db.Close())
}
