package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/access"
	"github.com/veil-project/veil/internal/metal/share"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// Config configures a running Metal server. Zero values take the documented defaults.
type Config struct {
	PairTimeout    time.Duration // how long a call waits for its other part: Server 1, for it to reach Server 2; Server 2, for Server 1's announcement, on time without calls or a link's set-up (default 30s)
	CallTimeout    time.Duration // a client request's wait for its turn and its call (default 5m)
	RedialInterval time.Duration // Server 1: pause between attempts to reach Server 2 (default 1s)
	PingInterval   time.Duration // Server 1: keep-alive on an idle link (default 5s)
	LinkDelay      time.Duration // added one-way latency on the 2PC link (benchmarks; default 0)
	MaxConns       int           // simultaneous client connections (default 256)
	// MaxWaitingPerAddr: requests of one client address (IPv6: one /64) waiting for their
	// turn or their other part at once; more are refused with 429 (default 32).
	MaxWaitingPerAddr int
	// MaxWaitingPerSite: the same for all the /64s of one IPv6 /48 together (one site, often
	// one customer, has 65,536 of them); IPv4 addresses have no such second bound (default
	// 64, or MaxWaitingPerAddr if larger).
	MaxWaitingPerSite int
	ReadTimeout       time.Duration // default 60s
	IdleTimeout       time.Duration // default 2m
	ShutdownTimeout   time.Duration // graceful drain limit (default 30s)
	StallTimeout      time.Duration // Server 1: a list download whose client takes nothing for this long is cut (default 1m)
	SilenceTimeout    time.Duration // Server 1: cut the link, in a call or not, when Server 2 echoes nothing on the liveness probe for this long (alive.go; default 10s)
	ShareEpoch        time.Duration // Server 1: the broadcast list's epoch (0: every download closes one)
	ShareRetention    time.Duration // Server 1: closed epochs kept this long (default 72h)
	Logger            *slog.Logger  // default: discard
	// TestTap, when set, is given the path and body of every client request: the tests that
	// check what a server learns read it. Not for production.
	TestTap func(path string, body []byte)
}

func (c *Config) defaults() {
	def(&c.PairTimeout, 30*time.Second)
	def(&c.CallTimeout, 5*time.Minute)
	def(&c.SilenceTimeout, 10*time.Second)
	def(&c.RedialInterval, time.Second)
	def(&c.PingInterval, 5*time.Second)
	def(&c.MaxConns, 256)
	def(&c.MaxWaitingPerAddr, 32)
	def(&c.MaxWaitingPerSite, max(64, c.MaxWaitingPerAddr))
	def(&c.ReadTimeout, time.Minute)
	def(&c.IdleTimeout, 2*time.Minute)
	def(&c.ShutdownTimeout, 30*time.Second)
	def(&c.StallTimeout, time.Minute)
	def(&c.ShareRetention, 72*time.Hour)
}

func def[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Server is an opened Metal server (either role).
type Server struct {
	cfg    Config
	log    *slog.Logger
	role   int
	db     *bbolt.DB
	store  *access.Store
	params access.Params
	tls    *tls.Config
	peer   PeerCred // Server 1: how to reach Server 2
	m      *metrics
	jobs   chan *job     // Server 1: calls in arrival order
	pend   *pending      // Server 2: client parts waiting for Server 1's announcement
	links  chan *conn    // Server 2: upgraded /v1/peer connections
	quit   chan struct{} // closed when Serve's context ends: jobs not yet running are answered
	wait   *waiters      // requests waiting in submit, per client address
	reach  *reach        // Server 1: whether Server 2 can be reached (linkstate.go)
	mu     sync.Mutex
	cur    *conn          // the running 2PC link (Server 2 closes it when Server 1 dials anew)
	up     bool           // the 2PC link is established
	last   access.Timings // the last access's breakdown
	shKeys *share.ServerKeys
	list   *share.List  // Server 1: the capability broadcast list
	sh     *share.Party // the link's sharing party (used by the call loop only)
	linkV1 atomic.Bool  // tests: Server 2 answers the link upgrade as a version-1 server (no queries)
	noLive atomic.Bool  // tests: Server 2 answers the liveness probe 404, as a server before session 17
}

// Open loads dir (made by Init).
func Open(dir string, cfg Config) (*Server, error) {
	cfg.defaults()
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }
	cb, err := read(FileConfig)
	if err != nil {
		return nil, fmt.Errorf("%s is not a Metal server directory (run veil metal server init): %w", dir, err)
	}
	var c config
	if err := json.Unmarshal(cb, &c); err != nil || (c.Role != 1 && c.Role != 2) {
		return nil, fmt.Errorf("%s: bad %s", dir, FileConfig)
	}
	s := &Server{cfg: cfg, role: c.Role, log: server.Logger(cfg.Logger, fmt.Sprintf("metal-server%d", c.Role)), m: newMetrics(),
		jobs: make(chan *job), pend: newPending(), links: make(chan *conn, 1),
		quit: make(chan struct{}), wait: newWaiters(cfg.MaxWaitingPerAddr, cfg.MaxWaitingPerSite), reach: newReach()}
	ca, err := read(pki.CACertFile)
	if err != nil {
		return nil, err
	}
	sc, err := pki.LoadServerCert(filepath.Join(dir, pki.ServerCertFile), filepath.Join(dir, pki.ServerKeyFile), "veil metal server cert --dir "+dir)
	if err != nil {
		return nil, err
	}
	if s.tls, err = serverTLS(sc.GetCertificate, ca); err != nil {
		return nil, err
	}
	if c.Role == 1 {
		pb, err := read(FilePeerCred)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(pb, &s.peer); err != nil {
			return nil, fmt.Errorf("%s: %w", FilePeerCred, err)
		}
	}
	if s.db, err = server.OpenState(filepath.Join(dir, FileDB), "metal server", stateVersion, time.Second); err != nil {
		return nil, err
	}
	st, err := s.openStore()
	if err != nil {
		s.db.Close()
		return nil, err
	}
	s.params = st.P
	if err := s.openShare(); err != nil {
		s.db.Close()
		return nil, err
	}
	s.log.Info("metal server opened", "dir", dir, "role", c.Role, "files", st.P.Files(), "block", st.P.BlockSize, "calls", st.Calls)
	return s, nil
}

func (s *Server) openStore() (*access.State, error) {
	var err error
	if s.store, err = access.NewStore(s.db); err != nil {
		return nil, err
	}
	st, err := s.store.Header() // the trees are loaded when the 2PC link comes up
	if err == nil && st == nil {
		err = errors.New("no Metal state (run veil metal server init)")
	}
	if err == nil && int(st.Role) != s.role {
		err = fmt.Errorf("state is for server %d", st.Role)
	}
	return st, err
}

// Handler is the HTTP API: /healthz, /metrics, /v1/info, /v1/account, /v1/access,
// Metal-SHARE's /v1/share/..., and on Server 2 /v1/peer.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	server.Mount(mux, s.m.reg, nil)
	mux.HandleFunc("GET /v1/info", s.handleInfo)
	mux.HandleFunc("POST /v1/account", s.handleCall(kindAccount))
	mux.HandleFunc("POST /v1/access", s.handleCall(kindAccess))
	mux.HandleFunc("POST /v1/share/enroll", s.handleCall(kindEnroll))
	mux.HandleFunc("POST /v1/share/send", s.handleCall(kindSend))
	mux.HandleFunc("GET /v1/share/key", s.handleShareKey)
	mux.HandleFunc("POST /v1/share/list", s.handleShareList)
	mux.HandleFunc("GET /v1/share/list", s.handleShareListGet)
	if s.role == 2 {
		mux.HandleFunc("POST /v1/peer", s.handlePeer)
		mux.HandleFunc("POST /v1/peer/alive", s.handleAlive)
	}
	return mux
}

// Serve answers on ls.HTTP (TLS) and keeps the 2PC link to the other server until ctx is
// cancelled, then drains in-flight requests and closes the link.
func (s *Server) Serve(ctx context.Context, ls server.Listeners) error {
	srv := &http.Server{Handler: s.Handler(), TLSConfig: s.tls, ReadTimeout: s.cfg.ReadTimeout, IdleTimeout: s.cfg.IdleTimeout,
		ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	lctx, stop := context.WithCancel(ctx)
	context.AfterFunc(ctx, func() { close(s.quit) })
	done := make(chan struct{})
	go func() { defer close(done); s.linkLoop(lctx) }()
	if s.role == 1 { // the timeouts in force: an operator sees what the flags set
		s.log.Info("serving", "addr", ls.Addr(), "silence timeout", s.cfg.SilenceTimeout, "pair timeout", s.cfg.PairTimeout)
	} else {
		s.log.Info("serving", "addr", ls.Addr(), "pair timeout", s.cfg.PairTimeout)
	}
	// Idle keep-alive connections give up their slot when all are taken (server.Limiter).
	err := server.ServeHTTP(ctx, srv, server.Limit(srv, ls.HTTP, s.cfg.MaxConns), s.cfg.ShutdownTimeout)
	stop()
	<-done
	s.log.Info("stopped", "err", err)
	return err
}

// Close closes the state file.
func (s *Server) Close() error { return s.db.Close() }

// LastTimings is the breakdown of the last access this server ran (veil bench metal).
func (s *Server) LastTimings() access.Timings {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Role is 1 or 2.
func (s *Server) Role() int { return s.role }
