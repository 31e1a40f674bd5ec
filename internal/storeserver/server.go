package storeserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/veil-project/veil/internal/server"
)

// Serve answers the HTTP API on ls.HTTP until ctx is cancelled, then shuts down gracefully
// (in-flight requests finish, up to Config.ShutdownTimeout) and returns, having closed the
// listener. TLS with the generated certificate unless Config.InsecureHTTP. The store has no
// datagram transport: ls.Packet must be nil. Close the Service afterwards.
func (s *Service) Serve(ctx context.Context, ls server.Listeners) error {
	ln := ls.HTTP
	if ls.Packet != nil {
		ls.Close()
		return errors.New("serve: the store has no datagram transport")
	}
	if !s.cfg.InsecureHTTP {
		tc, err := s.serverTLS()
		if err != nil {
			ln.Close()
			return fmt.Errorf("serve: %w", err)
		}
		ln = tls.NewListener(ln, tc)
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.RequestTimeout,
		WriteTimeout:      s.cfg.RequestTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.cfg.Logger.Info("store serving", "addr", ln.Addr().String(), "tls", !s.cfg.InsecureHTTP)
	// Idle keep-alive connections give up their slot when all are taken (server.Limiter).
	err := server.ServeHTTP(ctx, srv, server.Limit(srv, ln, s.cfg.MaxConns), s.cfg.ShutdownTimeout)
	s.cfg.Logger.Info("store stopped")
	return err
}

// authUser is an authenticated caller.
type authUser struct {
	name   string
	admin  bool
	secret [32]byte // the account's secret hash (Namespace.secret)
}

// authenticate checks the request's HTTP Basic credential.
func (s *Service) authenticate(r *http.Request) (authUser, bool) {
	name, secret, _ := r.BasicAuth()
	u, ok := s.users.authenticate(name, secret)
	if s.meta.shared() && name != "" && (!ok || !s.users.fresh(name, userRecheck)) {
		// added, removed or given a new secret through another node: read the record again
		// (kept as it was when the database does not answer)
		s.reloadUser(name)
		u, ok = s.users.authenticate(name, secret)
	}
	return authUser{name: name, admin: u.admin, secret: u.secretHash}, ok
}

// adminOnly guards a handler outside the API (/metrics): the admin only, 401 without a
// valid credential, 403 with a user's.
func (s *Service) adminOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := s.authenticate(r)
		switch {
		case !ok:
			s.unauthorized(w, r)
		case !u.admin:
			s.writeErr(w, r, errForbidden)
		default:
			h.ServeHTTP(w, r)
		}
	})
}

func (s *Service) unauthorized(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="veil store"`)
	s.writeErr(w, r, errUnauthorized)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Service) logRequests(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		lvl := s.cfg.Logger.Enabled(r.Context(), slog.LevelDebug)
		if lvl || sw.status >= 500 {
			s.cfg.Logger.Log(r.Context(), levelFor(sw.status), "request", "method", r.Method,
				"path", r.URL.EscapedPath(), "status", sw.status, "dur", time.Since(start))
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
