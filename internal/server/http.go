package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ServeHTTP serves srv on ln (with TLS when srv.TLSConfig is set) until ctx is cancelled
// or serving fails. Then it stops accepting, lets in-flight requests finish for up to
// timeout (DefaultShutdownTimeout when not positive), and closes what is left. Request
// contexts carry ctx's values; they are cancelled only when the drain is cut short. A stop
// by ctx returns nil; a drain that ran out of time returns an error saying so.
func ServeHTTP(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration) error {
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	if srv.BaseContext == nil {
		srv.BaseContext = func(net.Listener) context.Context { return reqCtx }
	}
	errc := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc: // failed before anyone asked it to stop
		ln.Close()
		return err
	}
	timeout = ShutdownTimeout(timeout)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if serr := srv.Shutdown(sctx); serr != nil {
		cancelReqs()
		srv.Close()
		err = fmt.Errorf("graceful shutdown did not finish within %v: %w", timeout, serr)
	}
	if serveErr := <-errc; err == nil && !errors.Is(serveErr, http.ErrServerClosed) {
		err = serveErr
	}
	return err
}

// NewRegistry is a server's own Prometheus registry (several servers can share a process),
// with the Go runtime and process collectors registered.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Mount adds GET /healthz (always open: "ok") and GET /metrics (reg in the Prometheus text
// format) to mux. guard, if not nil, wraps the metrics handler (an authentication check).
func Mount(mux *http.ServeMux, reg *prometheus.Registry, guard func(http.Handler) http.Handler) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	})
	var h http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if guard != nil {
		h = guard(h)
	}
	mux.Handle("GET /metrics", h)
}
