package vserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/server"
)

// Handler is the client API (docs/formats/peekaboo-wire.md) with /healthz and /metrics.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	server.Mount(mux, s.m.reg, nil)
	mux.HandleFunc("POST /v1/search", s.user("search", s.handleSearch))
	mux.HandleFunc("POST /v1/publish", s.user("publish", s.handlePublish))
	mux.HandleFunc("GET /v1/pir", s.user("pirparams", s.handlePIRParams))
	mux.HandleFunc("POST /v1/pir", s.user("pir", s.handlePIR))
	mux.HandleFunc("POST /v1/fetch", s.user("fetch", s.handleFetch))
	mux.HandleFunc("POST /v1/unpublish", s.user("unpublish", s.handleUnpublish))
	mux.HandleFunc("GET /v1/pairs", s.user("list", s.handleList))
	mux.HandleFunc("POST /v1/admin/users", s.user("adduser", s.handleAddUser))
	mux.HandleFunc("PUT /v1/clientkey", s.user("clientkey", s.handlePutClientKey))
	mux.HandleFunc("GET /v1/clientkey/{name}", s.user("clientkey", s.handleGetClientKey))
	mux.HandleFunc("POST /v1/grants", s.user("grant", s.handlePutGrant))
	mux.HandleFunc("GET /v1/grants", s.user("grants", s.handleGetGrants))
	mux.HandleFunc("GET /v1/kserver-key", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(s.kkey + "\n")) })
	return mux
}

type userHandler func(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error)

// user authenticates the caller (HTTP Basic: name and secret), reads the body, and maps
// the handler's error to a one-line text reply.
func (s *Server) user(op string, h userHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Authenticate before reading the body: an unknown caller must not make the
		// server buffer up to MaxBody bytes.
		name, ok := s.authenticate(r)
		var body []byte
		var err error
		if ok {
			body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
		}
		if s.cfg.TestTap != nil {
			s.cfg.TestTap("request", tapRequest(r, body))
		}
		code := http.StatusOK
		switch {
		case !ok:
			code, err = http.StatusUnauthorized, errors.New("unknown user or wrong secret")
		case err != nil:
			code, err = http.StatusRequestEntityTooLarge, fmt.Errorf("request body: %v", err)
		default:
			code, err = h(w, r, name, body)
		}
		if err != nil {
			if code == http.StatusInternalServerError {
				s.log.Error(op, "err", err)
			}
			http.Error(w, err.Error(), code)
		}
		s.m.requests.WithLabelValues(op, strconv.Itoa(code)).Inc()
	}
}

func tapRequest(r *http.Request, body []byte) []byte {
	var b []byte
	b = append(b, r.Method+" "+r.URL.String()+"\n"...)
	for k, vs := range r.Header {
		for _, v := range vs {
			b = append(b, k+": "+v+"\n"...)
		}
	}
	return append(b, body...)
}

func (s *Server) authenticate(r *http.Request) (string, bool) {
	name, secret, ok := r.BasicAuth()
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil {
		return "", false
	}
	s.usersMu.RLock()
	u, known := s.users[name]
	s.usersMu.RUnlock()
	h := sha256.Sum256(raw)
	if !known || subtle.ConstantTimeCompare(h[:], u.SecretHash[:]) != 1 {
		return "", false
	}
	return name, true
}

func (s *Server) isAdmin(name string) bool {
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	return s.users[name].Admin
}

func writeBin(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(b)
}

// relayErr maps a mixer/relay failure to an HTTP status.
func relayErr(err error) (int, error) {
	if errors.Is(err, errKServer) || errors.Is(err, errStopped) {
		return http.StatusBadGateway, err
	}
	return http.StatusServiceUnavailable, err
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	req, err := wire.ParseSearch(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	if n := len(req.Sealed); n != wire.SealedQuerySize() {
		return http.StatusBadRequest, fmt.Errorf("sealed query of %d bytes, want %d (a client whose veil is older or newer than this server's?)", n, wire.SealedQuerySize())
	}
	res, err := s.mix.submit(r.Context(), wire.RelayItem{Kind: wire.KindQuery, Payload: req.Sealed})
	if err != nil {
		return relayErr(err)
	}
	out := &wire.Results{Status: res.Status}
	if res.Status == wire.StatusOK {
		ms, err := wire.ParseMatches(res.Payload)
		if err != nil {
			return http.StatusBadGateway, fmt.Errorf("k-server reply: %w", err)
		}
		if out.Results, err = release(s.db, user, ms); err != nil {
			return http.StatusInternalServerError, err
		}
	}
	writeBin(w, out.Marshal())
	return http.StatusOK, nil
}

func (s *Server) handlePublish(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	req, err := wire.ParsePublish(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	for i, p := range req.Pairs { // checked before storing: the K-server would refuse the chunk
		if n := len(p.Sealed); n != wire.SealedItemSize() {
			return http.StatusBadRequest, fmt.Errorf("pair %d: sealed item of %d bytes, want %d (a client whose veil is older or newer than this server's?)", i, n, wire.SealedItemSize())
		}
	}
	if err := s.checkACLs(req.Pairs); err != nil {
		return http.StatusBadRequest, err
	}
	if err := storePairs(s.db, user, req.Pairs); err != nil {
		if errors.Is(err, errNotYours) {
			return http.StatusForbidden, err
		}
		if errors.Is(err, errRepublish) {
			return http.StatusConflict, err
		}
		return http.StatusInternalServerError, err
	}
	tag := req.Pairs[0].ID
	s.settle.begin(tag)
	res, err := s.mix.submit(r.Context(), wire.RelayItem{Kind: wire.KindPublish, Payload: wire.MarshalChunk(req.Chunk())})
	if err != nil {
		s.settle.end(tag, true)
		s.needSync() // the K-server may have committed the chunk before the relay failed
		code, err := relayErr(err)
		return code, fmt.Errorf("%w; %s", err, unackedNote(w, len(req.Pairs)))
	}
	if res.Status != wire.StatusOK {
		s.settle.end(tag, false)
		return s.refusedChunk(w, user, req.Pairs, res.Status)
	}
	ack, err := wire.ParsePublishAck(res.Payload)
	if err != nil || int(ack.N) != len(req.Pairs) {
		s.settle.end(tag, true)
		return http.StatusBadGateway, fmt.Errorf("k-server did not store all %d pairs (%v); %s", len(req.Pairs), err, unackedNote(w, len(req.Pairs)))
	}
	err = ackPairs(s.db, req.Pairs)
	s.settle.end(tag, err != nil)
	if err != nil {
		return http.StatusInternalServerError, fmt.Errorf("record the K-server's acknowledgement: %v; %s", err, unackedNote(w, len(req.Pairs)))
	}
	if err := s.replicate(req.Pairs, ack); err != nil {
		s.needSync()
		return http.StatusInternalServerError, fmt.Errorf("private-query table: %w", err)
	}
	writeBin(w, (&wire.Count{N: uint32(len(req.Pairs))}).Marshal())
	return http.StatusOK, nil
}

// unackedNote says what becomes of the pairs of a chunk the K-server did not acknowledge,
// and marks the answer so (wire.HeaderUnacked) for clients, which then add nothing.
func unackedNote(w http.ResponseWriter, n int) string {
	w.Header().Set(wire.HeaderUnacked, "settling")
	what, them := "pairs", "them"
	if n == 1 {
		what, them = "pair", "it"
	}
	return fmt.Sprintf("this V-server lists the chunk's %d %s as unacknowledged and removes %s from both servers (retrying while the K-server does not answer); publish %s again", n, what, them, them)
}

// refusedChunk answers a publication whose chunk the K-server refused. The K-server
// stores a chunk whole or not at all (one transaction), so none of its pairs is there:
// this server removes the ones it stored for it, which were left listed and inert. If
// that fails they are still marked unacknowledged, so the settling loop removes them
// (settle.go); the answer says so (it said they stayed listed, never matching, for the
// owner to unpublish, from before unacknowledged pairs were settled).
func (s *Server) refusedChunk(w http.ResponseWriter, user string, pairs []wire.PublishPair, status uint8) (int, error) {
	ids := make([]wire.ID, len(pairs))
	for i, p := range pairs {
		ids[i] = p.ID
	}
	why := fmt.Sprintf("k-server refused the chunk (status %d): keys not sealed to it, altered, or naming pair ids it holds (a pair id is never published twice: publish with fresh ids)", status)
	if _, err := s.removePairs(user, ids); err != nil {
		s.log.Error("remove the pairs of a refused chunk", "err", err)
		s.settle.poke()
		return http.StatusInternalServerError, fmt.Errorf("%s; removing them here failed (%v), so %s", why, err, unackedNote(w, len(pairs)))
	}
	return http.StatusBadRequest, fmt.Errorf("%s; none of its pairs was kept", why)
}

// checkACLs refuses a chunk whose ACLs name someone who is not a registered user: such a
// name (a typo, usually) would silently leave the pair visible to its owner alone. Owners
// can already tell registered names apart (GET /v1/clientkey/{name}), so this tells them
// nothing new.
func (s *Server) checkACLs(pairs []wire.PublishPair) error {
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	for i, p := range pairs {
		for _, name := range p.ACL {
			if _, ok := s.users[name]; !ok {
				return fmt.Errorf("pair %d: the ACL names %q, who is not a registered user (check the spelling; the V-server's administrator adds users)", i+1, name)
			}
		}
	}
	return nil
}

func (s *Server) handleUnpublish(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	req, err := wire.ParseIDs(body)
	if err != nil {
		return http.StatusBadRequest, err
	}
	// The K-server removes first: if its relay fails, this server still lists the pairs,
	// so the owner's retry reaches the K-server again (removing here first would leave the
	// key on the K-server with nothing left to name it by).
	owned, err := ownedPairs(s.db, user, req.IDs)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if len(owned) > 0 {
		res, err := s.mix.submit(r.Context(), wire.RelayItem{Kind: wire.KindUnpublish, Payload: (&wire.IDs{IDs: owned}).Marshal()})
		if err != nil {
			s.needSync() // the K-server may have removed them, or not
			return relayErr(err)
		}
		if res.Status != wire.StatusOK {
			s.needSync()
			return http.StatusBadGateway, fmt.Errorf("k-server refused the removal (status %d)", res.Status)
		}
	}
	gone, err := s.removePairs(user, owned)
	if err != nil {
		s.needSync() // the K-server removed them: this table still holds their entries
		return http.StatusInternalServerError, err
	}
	writeBin(w, (&wire.Count{N: uint32(len(gone))}).Marshal())
	return http.StatusOK, nil
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request, user string, _ []byte) (int, error) {
	v := uint8(wire.Version) // what clients before version 2 parse
	if r.URL.RawQuery == wire.ListQuery {
		v = wire.ListVersion2
	}
	l, err := listPairs(s.db, user, v)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	writeBin(w, l.Marshal())
	return http.StatusOK, nil
}

func (s *Server) handleAddUser(w http.ResponseWriter, r *http.Request, user string, body []byte) (int, error) {
	if !s.isAdmin(user) {
		return http.StatusForbidden, errors.New("adding users needs the administrator's credential")
	}
	var req struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, fmt.Errorf("add user: body is not {\"name\": ...}")
	}
	if err := wire.CheckName(req.Name); err != nil {
		return http.StatusBadRequest, err
	}
	cred, secret, err := newCredential(req.Name, s.endpoint, s.caPEM, s.kkey)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	rec := wire.UserRecord{SecretHash: sha256.Sum256(secret)}
	if err := putUser(s.db, req.Name, &rec); err != nil {
		return http.StatusConflict, err
	}
	s.usersMu.Lock()
	s.users[req.Name] = rec
	s.usersMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(cred)
	return http.StatusOK, nil
}
