package storeserver

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// The API router. Go's ServeMux cleans request paths and answers a path with '.', '..' or
// '//' segments (or a missing trailing slash) with a redirect to the cleaned one, so a
// client following it would store under a name it did not send. The /v1/ routes are
// therefore routed here, on the escaped path exactly as sent, and parsed strictly
// (Limits.parsePath): the API never redirects, and every answer but /healthz's, /readyz's and
// /metrics' success is JSON.

// apiReq is what a route handler gets: the caller's namespace (user routes) and the
// parsed path (dir and name; for directory routes, dir is the whole directory path).
type apiReq struct {
	ns        *Namespace
	dir, name string
}

type apiHandler func(w http.ResponseWriter, r *http.Request, a apiReq)

// Kinds of path a route takes after its name.
const (
	tailNone = iota // exact: /v1/move
	tailFile        // /v1/files/{path}
	tailDir         // /v1/list/{dir}, "" is the root
	tailUser        // /v1/users/{name}
)

type apiRoute struct {
	tail    int
	admin   bool
	methods map[string]apiHandler
}

func (s *Service) routes() map[string]apiRoute {
	user := func(tail int, m map[string]apiHandler) apiRoute { return apiRoute{tail: tail, methods: m} }
	admin := func(tail int, m map[string]apiHandler) apiRoute { return apiRoute{tail: tail, admin: true, methods: m} }
	return map[string]apiRoute{
		"files":  user(tailFile, map[string]apiHandler{"PUT": s.handlePut, "GET": s.handleGet, "DELETE": s.handleDelete}),
		"stat":   user(tailFile, map[string]apiHandler{"GET": s.handleStat}),
		"list":   user(tailDir, map[string]apiHandler{"GET": s.handleList}),
		"search": user(tailDir, map[string]apiHandler{"GET": s.handleSearch}),
		"dirs":   user(tailDir, map[string]apiHandler{"POST": s.handleCreate}),
		"move":   user(tailNone, map[string]apiHandler{"POST": s.handleMove}),
		"batch":  user(tailNone, map[string]apiHandler{"POST": s.handleBatch}),
		"stats":  admin(tailNone, map[string]apiHandler{"GET": s.handleStats}),
		"users":  admin(tailNone, map[string]apiHandler{"POST": s.handleAddUser, "GET": s.handleUsers}),
		"users/": admin(tailUser, map[string]apiHandler{"DELETE": s.handleRemoveUser, "PATCH": s.handleSetQuota}),
		"gc":     admin(tailNone, map[string]apiHandler{"POST": s.handleGC}),
	}
}

// Handler returns the HTTP API (docs/formats/store-api.md).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	guard := func(h http.Handler) http.Handler { return s.adminOnly(h) }
	if s.cfg.PublicMetrics {
		guard = nil
	}
	server.Mount(mux, s.metrics.reg, guard)
	routes := s.routes()
	return s.logRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := requestPath(r)
		switch {
		case p == "/readyz":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.writeErr(w, r, errMethod(r.Method, p, "GET"))
				return
			}
			s.handleReady(w, r)
		case p == "/healthz" || p == "/metrics":
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				s.writeErr(w, r, errMethod(r.Method, p, "GET"))
				return
			}
			mux.ServeHTTP(w, r)
		case strings.HasPrefix(p, "/"+storewire.Version+"/"):
			s.serveAPI(w, r, routes, p[len(storewire.Version)+2:])
		default:
			s.writeErr(w, r, fmt.Errorf("%w: no route %.64q", errNoRoute, p))
		}
	}))
}

var (
	errNoRoute   = fmt.Errorf("%w", storage.ErrNotFound)
	errForbidden = fmt.Errorf("this credential may not use this route: %w", storage.ErrPermission)
)

func errMethod(method, path string, allowed ...string) error {
	return fmt.Errorf("%w: method %s not allowed on %.64q (allowed: %s)", storewire.ErrMethod, method, path, strings.Join(allowed, ", "))
}

func (s *Service) serveAPI(w http.ResponseWriter, r *http.Request, routes map[string]apiRoute, rest string) {
	name, tail, hasTail := strings.Cut(rest, "/")
	key := name
	if hasTail {
		key += "/"
	}
	rt, ok := routes[key]
	if !ok && hasTail {
		rt, ok = routes[name] // a path route ("files/..."), keyed by its name
		if ok && rt.tail == tailNone {
			ok = false
		}
	}
	if !ok || (rt.tail != tailNone) != hasTail {
		s.writeErr(w, r, fmt.Errorf("%w: no route /%s/%.64s", errNoRoute, storewire.Version, rest))
		return
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	h, ok := rt.methods[method]
	if !ok {
		var allowed []string
		for m := range rt.methods {
			allowed = append(allowed, m)
		}
		sort.Strings(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		s.writeErr(w, r, errMethod(r.Method, "/"+storewire.Version+"/"+name, allowed...))
		return
	}
	u, ok := s.authenticate(r)
	switch {
	case !ok:
		s.unauthorized(w, r)
		return
	case u.admin != rt.admin:
		s.writeErr(w, r, errForbidden)
		return
	}
	a := apiReq{}
	if !rt.admin {
		a.ns = &Namespace{s: s, user: u.name, secret: u.secret}
	}
	var err error
	switch rt.tail {
	case tailFile:
		a.dir, a.name, err = s.cfg.Limits.parsePath(tail, false)
	case tailDir:
		a.dir, a.name, err = s.cfg.Limits.parsePath(tail, true)
		a.dir, a.name = storage.Join(a.dir, a.name), ""
	case tailUser:
		a.name, err = unescapeUser(tail)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	h(w, r, a)
}

// requestPath is the request's path exactly as the client sent it (escaped). URL.EscapedPath
// is not: when the raw path holds a byte Go would have escaped ('|', '{', a raw UTF-8 byte)
// it re-escapes the decoded path, turning an escaped '/' ("a%2Fb|") into a separator, so
// a request refused as sent would store under a name the client did not send. RawPath,
// when set, is the path as sent; when empty, the path as sent is the default escaping.
func requestPath(r *http.Request) string {
	if r.URL.RawPath != "" {
		return r.URL.RawPath
	}
	return r.URL.EscapedPath()
}

// unescapeUser decodes a user name route segment (one segment, no '/').
func unescapeUser(tail string) (string, error) {
	if tail == "" || strings.Contains(tail, "/") {
		return "", fmt.Errorf("%w: bad user name path %.64q", storage.ErrInvalidName, tail)
	}
	_, n, err := Limits{MaxDepth: 1, MaxNameLen: storage.MaxNameLen, MaxPathLen: storage.MaxNameLen}.parsePath(tail, false)
	if err != nil {
		return "", err
	}
	return n, nil
}
