// Package server is the shape every veil server follows and the pieces they share.
//
// A server is opened, served, and closed:
//
//	s, err := keyserver.Open(ctx, dir, cfg) // load state, open databases; binds nothing
//	ls, err := server.Listen(httpAddr, udpAddr) // or listeners the caller made (tests: :0)
//	err = s.Serve(ctx, ls) // until ctx is cancelled: then a graceful drain, bounded by a timeout
//	err = s.Close()        // release what Open acquired (databases, Redis connections)
//
// Serve owns the listeners it is given and closes them before it returns; Close is called
// once, after Serve returned (or instead of Serve). Several servers in one process are
// composed with a Group: the first one to fail stops the others, and Close closes all.
//
// Shared pieces: ServeHTTP (serve an *http.Server until ctx ends, then shut down within
// the configured timeout, DefaultShutdownTimeout unless set), Mount (GET /healthz and GET
// /metrics on a server's own Prometheus registry from NewRegistry), Logger (a server's slog
// logger, discarding when none is given), Limit (at most N connections, idle keep-alive
// ones closed to make room when all are taken).
//
// It imports only the standard library, prometheus and golang.org/x/sync; it must not
// import any other veil package (every server imports it, never the reverse).
package server
