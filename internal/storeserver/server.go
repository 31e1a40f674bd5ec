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

	"golang.org/x/net/netutil"

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
	if s.cfg.MaxConns > 0 {
		ln = netutil.LimitListener(ln, s.cfg.MaxConns)
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
	err := server.ServeHTTP(ctx, srv, ln, s.cfg.ShutdownTimeout)
	s.cfg.Logger.Info("store stopped")
	return err
}

// Handler returns the HTTP API (docs/formats/store-api.md).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	guard := func(h http.Handler) http.Handler { return s.admin(h.ServeHTTP) }
	if s.cfg.PublicMetrics {
		guard = nil
	}
	server.Mount(mux, s.metrics.reg, guard)
	mux.Handle("GET /v1/stats", s.admin(func(w http.ResponseWriter, r *http.Request) {
		st, err := s.Stats()
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}))
	s.adminRoutes(mux)
	mux.Handle("PUT /v1/files/{path...}", s.user(s.handlePut))
	mux.Handle("GET /v1/files/{path...}", s.user(s.handleGet))
	mux.Handle("DELETE /v1/files/{path...}", s.user(s.handleDelete))
	mux.Handle("GET /v1/stat/{path...}", s.user(s.handleStat))
	mux.Handle("GET /v1/list/{path...}", s.user(s.handleList))
	mux.Handle("GET /v1/search/{path...}", s.user(s.handleSearch))
	mux.Handle("POST /v1/dirs/{path...}", s.user(s.handleCreate))
	mux.Handle("POST /v1/move", s.user(s.handleMove))
	return s.logRequests(mux)
}

type userHandler func(w http.ResponseWriter, r *http.Request, ns *Namespace)

// user authenticates a namespace's owner (HTTP Basic: user name and secret).
func (s *Service) user(h userHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, secret, _ := r.BasicAuth()
		u, ok := s.users.authenticate(name, secret)
		if !ok || u.admin {
			s.unauthorized(w, r)
			return
		}
		h(w, r, &Namespace{s: s, user: name})
	})
}

// admin authenticates the administrator.
func (s *Service) admin(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, secret, _ := r.BasicAuth()
		if u, ok := s.users.authenticate(name, secret); !ok || !u.admin {
			s.unauthorized(w, r)
			return
		}
		h(w, r)
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
