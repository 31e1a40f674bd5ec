package keyserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/veil-project/veil/internal/ratelog"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// Config configures a running key server. Zero values take the documented defaults.
type Config struct {
	HTTPSAddr       string        // listen address for HTTPS (default 127.0.0.1:7443)
	UDPAddr         string        // listen address for UDP sessions ("" or "-": no UDP)
	RateLimit       RateLimit     // per-client limit (default DefaultRateLimit)
	RateLimitStore  string        // "" for bbolt in the directory, or redis://host:port/db
	MaxBatch        int           // most inputs per request (default 1024)
	MaxBody         int64         // largest HTTPS request body (default 1 MiB)
	MaxDatagram     int           // largest UDP datagram read (default 8192)
	MaxSessions     int           // open UDP sessions (default 100,000)
	MaxClientSess   int           // open UDP sessions per client (default 64)
	MaxConns        int           // simultaneous HTTPS connections (default 10,000)
	SessionTTL      time.Duration // UDP session lifetime (default 1h)
	SessionIdle     time.Duration // a UDP session unused this long ends (default 5m)
	ReadTimeout     time.Duration // HTTPS read timeout (default 10s)
	IdleTimeout     time.Duration // keep-alive idle timeout (default 2m)
	ShutdownTimeout time.Duration // graceful drain limit (default server.DefaultShutdownTimeout)
	ReloadInterval  time.Duration // how often keys and clients are re-read (default 1s)
	MaxHeaderBytes  int           // HTTP header limit (default 16 KiB)
	UDPWorkers      int           // UDP reader goroutines (default 2)
	Logger          *slog.Logger  // default: discard
	testNow         func() time.Time
}

// DefaultConfig holds the values zero fields of a Config take, and the addresses a
// key server listens on by default (`veil keyserver serve`; a Config with UDPAddr ""
// serves no UDP).
func DefaultConfig() Config {
	return Config{HTTPSAddr: defaultHTTPS, UDPAddr: defaultUDP, RateLimit: DefaultRateLimit(),
		MaxBatch: 1024, MaxBody: 1 << 20, MaxDatagram: 8192, MaxSessions: 100_000, MaxClientSess: 64,
		MaxConns: 10_000, SessionTTL: time.Hour, SessionIdle: 5 * time.Minute, ReadTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ShutdownTimeout: server.DefaultShutdownTimeout, ReloadInterval: time.Second, MaxHeaderBytes: 16 << 10,
		UDPWorkers: 2}
}

func (c *Config) defaults() {
	d := DefaultConfig()
	if c.HTTPSAddr == "" {
		c.HTTPSAddr = d.HTTPSAddr
	}
	if c.UDPAddr == "-" {
		c.UDPAddr = ""
	}
	if c.RateLimit.Mode == "" { // the default mode; fields the caller set are kept
		rl := &c.RateLimit
		rl.Mode = d.RateLimit.Mode
		setDefault(&rl.Q, d.RateLimit.Q)
		setDefault(&rl.Epoch, d.RateLimit.Epoch)
		setDefault(&rl.Delay, d.RateLimit.Delay)
		setDefault(&rl.Start, d.RateLimit.Start)
		setDefault(&rl.Max, d.RateLimit.Max)
	}
	setDefault(&c.MaxBatch, d.MaxBatch)
	setDefault(&c.MaxBody, d.MaxBody)
	setDefault(&c.MaxDatagram, d.MaxDatagram)
	setDefault(&c.MaxSessions, d.MaxSessions)
	setDefault(&c.MaxClientSess, d.MaxClientSess)
	setDefault(&c.MaxConns, d.MaxConns)
	setDefault(&c.SessionTTL, d.SessionTTL)
	setDefault(&c.SessionIdle, d.SessionIdle)
	setDefault(&c.ReadTimeout, d.ReadTimeout)
	setDefault(&c.IdleTimeout, d.IdleTimeout)
	setDefault(&c.ShutdownTimeout, d.ShutdownTimeout)
	setDefault(&c.ReloadInterval, d.ReloadInterval)
	setDefault(&c.MaxHeaderBytes, d.MaxHeaderBytes)
	setDefault(&c.UDPWorkers, d.UDPWorkers)
	c.Logger = server.Logger(c.Logger, "keyserver")
	if c.testNow == nil {
		c.testNow = time.Now
	}
}

// longestDelay bounds the rate-limit delay of one request (a full batch at the largest delay).
func (c *Config) longestDelay() time.Duration {
	switch c.RateLimit.Mode {
	case ModeFixed:
		return time.Duration(c.MaxBatch) * c.RateLimit.Delay
	case ModeExp:
		return time.Duration(c.MaxBatch) * c.RateLimit.Max
	}
	return 0
}

func setDefault[T int | int64 | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Server is a key server opened on a directory, with its listeners bound.
type Server struct {
	dir     string
	cfg     Config
	log     *slog.Logger
	m       *metrics
	lim     *limiter
	state   atomic.Pointer[state]
	reloadM sync.Mutex   // one reload at a time
	seen    [2]fileStamp // ks.json and clients.json as last loaded
	udp     *net.UDPConn
	reqCtx  context.Context // requests' context: Serve's values, cancelled when cut short
	http    *http.Server
	sess    sessions
	wg      sync.WaitGroup
	limWarn ratelog.Spacer // warnings of refusals the rate-limit store causes (faultlog.go)
}

// state is what reload swaps in: the key ring and the client registry.
type state struct {
	ring    *ring
	clients map[string]ClientInfo // by certificate serial (hex)
	active  map[string]bool       // names of unrevoked clients
}

// Open loads the directory and opens the rate-limit store (ctx bounds connecting to
// Redis). It binds nothing: Serve is given the listeners (see Listen).
func Open(ctx context.Context, dir string, cfg Config) (*Server, error) {
	cfg.defaults()
	if err := cfg.RateLimit.check(); err != nil {
		return nil, err
	}
	if err := cfg.checkLimits(); err != nil {
		return nil, err
	}
	s := &Server{dir: dir, cfg: cfg, log: cfg.Logger, m: newMetrics()}
	if err := s.reload(true); err != nil {
		return nil, err
	}
	for _, k := range s.state.Load().ring.keys { // one element and its answer must fit a datagram
		if need := kswire.MinDatagram - 1 + k.Public().ElementSize() + k.Public().ProofSize(); cfg.MaxDatagram < need {
			return nil, fmt.Errorf("max datagram %d bytes: key %s needs at least %d for one element", cfg.MaxDatagram, k.ID(), need)
		}
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, fileCACert))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := pki.LoadServerCert(filepath.Join(dir, fileSrvCert), filepath.Join(dir, fileSrvKey), "veil keyserver cert --dir "+dir)
	if err != nil {
		return nil, err
	}
	var st RateStore
	if strings.HasPrefix(cfg.RateLimitStore, "redis://") || strings.HasPrefix(cfg.RateLimitStore, "rediss://") {
		var rs *redisStore
		if rs, err = openRedisStore(ctx, cfg.RateLimitStore, cfg.Logger); err == nil {
			rs.countTTL = max(rs.countTTL, 2*cfg.RateLimit.Epoch) // a count outlives its epoch
			st = rs
		}
	} else if cfg.RateLimitStore == "" {
		st, err = openBoltStore(filepath.Join(dir, fileRateDB))
	} else {
		err = fmt.Errorf("ratelimit store %q: want redis://host:port/db or empty for the local file", cfg.RateLimitStore)
	}
	if err != nil {
		return nil, fmt.Errorf("open rate-limit store: %w", err)
	}
	s.lim = &limiter{p: cfg.RateLimit, st: st, now: cfg.testNow, sleep: sleepCtx}
	s.sess.init(cfg.MaxSessions, cfg.MaxClientSess)
	s.http = &http.Server{
		Handler: s.routes(),
		TLSConfig: &tls.Config{
			GetCertificate: cert.GetCertificate, // `veil keyserver cert` needs no restart
			ClientCAs:      pool,
			ClientAuth:     tls.VerifyClientCertIfGiven, // /healthz and /metrics need no certificate
			MinVersion:     tls.VersionTLS13,
			NextProtos:     []string{"h2", "http/1.1"},
		},
		ReadHeaderTimeout: cfg.ReadTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.ReadTimeout + cfg.longestDelay() + 30*time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// Listen binds the addresses of cfg: HTTPSAddr (default 127.0.0.1:7443) and UDPAddr
// ("" or "-": no UDP).
func Listen(cfg Config) (server.Listeners, error) {
	cfg.defaults()
	return server.Listen(cfg.HTTPSAddr, cfg.UDPAddr)
}

// Serve answers HTTPS on ls.HTTP and UDP sessions on ls.Packet (nil: none) until ctx is
// cancelled, then stops accepting, drains in-flight requests (up to ShutdownTimeout) and
// returns, having closed ls. Call it once; Close afterwards.
func (s *Server) Serve(ctx context.Context, ls server.Listeners) error {
	if ls.Packet != nil {
		udp, ok := ls.Packet.(*net.UDPConn)
		if !ok {
			ls.Close()
			return fmt.Errorf("key server: the datagram listener must be UDP, not %T", ls.Packet)
		}
		udp.SetReadBuffer(4 << 20)
		udp.SetWriteBuffer(4 << 20)
		s.udp = udp
	}
	s.log.Info("key server listening", "https", ls.Addr(), "udp", ls.PacketAddr(),
		"suite", s.state.Load().ring.suite.String(), "ratelimit", s.cfg.RateLimit.Mode)
	var cancelReqs context.CancelFunc
	s.reqCtx, cancelReqs = context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	stop := make(chan struct{})
	if s.udp != nil {
		for range s.cfg.UDPWorkers {
			s.wg.Add(1)
			go s.readUDP()
		}
	}
	s.wg.Add(1)
	go s.reloadLoop(stop)
	// Idle keep-alive connections give up their slot when all are taken (server.Limiter).
	err := server.ServeHTTP(ctx, s.http, server.Limit(s.http, ls.HTTP, s.cfg.MaxConns), s.cfg.ShutdownTimeout)
	s.log.Info("key server stopping")
	close(stop)
	if s.udp != nil {
		s.udp.Close() // its answers could no longer be sent: cut their delays short
		cancelReqs()
	}
	s.wg.Wait()
	s.log.Info("key server stopped")
	return err
}

// Close persists and closes the rate-limit state. Call it after Serve returned.
func (s *Server) Close() error { return s.lim.st.Close() }

func (s *Server) reloadLoop(stop <-chan struct{}) {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if err := s.reload(false); err != nil {
				s.log.Error("reload key server directory", "err", err)
			}
			s.sess.prune(s.cfg.testNow(), s.cfg.SessionIdle)
			s.m.sessions.Set(float64(s.sess.len()))
		}
	}
}

// fileStamp tells versions of a file apart: modification time alone misses two writes in
// one clock tick, but every atomic replacement is a new inode.
type fileStamp struct {
	mtime time.Time
	size  int64
	ino   uint64
	ctime int64 // an inode number can be reused; its change time then moves
}

func stampOf(fi os.FileInfo) fileStamp {
	st := fileStamp{mtime: fi.ModTime(), size: fi.Size()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.ctime = sys.Ino, sys.Ctim.Nano()
	}
	return st
}

// Reload re-reads the key ring and the client registry now, instead of at the next reload
// interval.
func (s *Server) Reload() error { return s.reload(true) }

// reload re-reads ks.json, the keys and clients.json when either file changed.
func (s *Server) reload(force bool) error {
	s.reloadM.Lock()
	defer s.reloadM.Unlock()
	var mt [2]fileStamp
	for i, f := range []string{fileMeta, fileClients} {
		fi, err := os.Stat(filepath.Join(s.dir, f))
		if err != nil {
			if i == 0 && errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w: %s", ErrNotInit, s.dir)
			}
			return err
		}
		mt[i] = stampOf(fi)
	}
	if !force && mt == s.seen {
		return nil
	}
	m, err := readMeta(s.dir)
	if err != nil {
		return err
	}
	r, err := loadRing(s.dir, m)
	if err != nil {
		return err
	}
	reg, err := readRegistry(s.dir)
	if err != nil {
		return err
	}
	st := &state{ring: r, clients: make(map[string]ClientInfo, len(reg.Clients)), active: map[string]bool{}}
	for _, c := range reg.Clients {
		st.clients[c.Serial] = c
		st.active[c.Name] = c.Revoked == nil
	}
	s.state.Store(st)
	s.seen = mt
	if !force {
		s.log.Info("reloaded key ring and clients", "keys", len(r.keys), "clients", len(reg.Clients))
	}
	return nil
}

// errRevoked reports a certificate that is unknown to the registry or revoked.
var errRevoked = errors.New("client revoked or unknown")

// authorize maps a verified client certificate to a registered, unrevoked client name.
func (s *Server) authorize(cs *tls.ConnectionState) (string, error) {
	if cs == nil || len(cs.VerifiedChains) == 0 {
		return "", errors.New("no verified client certificate")
	}
	serial := cs.VerifiedChains[0][0].SerialNumber.Text(16)
	c, ok := s.state.Load().clients[serial]
	if !ok {
		// A client added since the last reload tick (veil serve registers users after its
		// servers listen): look at the registry now rather than refuse its first request.
		// reload(false) only stats the two files when nothing changed.
		if err := s.reload(false); err != nil {
			s.log.Error("reload key server directory", "err", err)
		}
		c, ok = s.state.Load().clients[serial]
	}
	if !ok || c.Revoked != nil {
		return "", errRevoked
	}
	return c.Name, nil
}

// clientActive reports whether name may still query (used by UDP sessions).
func (s *Server) clientActive(name string) bool { return s.state.Load().active[name] }
