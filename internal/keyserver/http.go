package keyserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/server"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/evaluate", s.handleEvaluate)
	mux.HandleFunc("POST /v1/session", s.handleSession)
	mux.HandleFunc("DELETE /v1/session", s.handleSessionClose)
	server.Mount(mux, s.m.reg, nil)
	return mux
}

// evalError is a refused evaluation: the HTTP status, the UDP error code (0: drop
// silently) and the metric reason.
type evalError struct {
	status int
	code   byte
	reason string
	err    error
}

func (e *evalError) Error() string { return e.err.Error() }

// evaluate is the core shared by both transports: parse, pick the key, charge the rate
// limit, evaluate, encode. It returns the encoded Response or an *evalError.
func (s *Server) evaluate(ctx context.Context, client, transport string, body []byte) ([]byte, *evalError) {
	start := time.Now()
	defer func() { s.m.latency.WithLabelValues(transport).Observe(time.Since(start).Seconds()) }()
	req, err := kswire.ParseRequest(body)
	if err != nil {
		return nil, &evalError{http.StatusBadRequest, kswire.CodeBadRequest, "malformed", err}
	}
	if len(req.Elements) > s.cfg.MaxBatch {
		return nil, &evalError{http.StatusRequestEntityTooLarge, kswire.CodeBatchTooLarge, "batch_too_large",
			errors.New("batch of " + strconv.Itoa(len(req.Elements)) + " exceeds the limit of " + strconv.Itoa(s.cfg.MaxBatch))}
	}
	key := s.state.Load().ring.keys[req.KeyID]
	if key == nil || key.Suite() != req.Suite {
		return nil, &evalError{http.StatusNotFound, kswire.CodeUnknownKey, "unknown_key",
			errors.New("key " + req.Suite.String() + "/" + req.KeyID.String() + " is not served here")}
	}
	s.m.inFlight.Inc() // from here to the answer: the rate-limit delay, then the evaluation
	defer s.m.inFlight.Dec()
	release, err := s.lim.admit(ctx, client, len(req.Elements))
	switch {
	case errors.Is(err, ErrRateLimited):
		return nil, &evalError{http.StatusTooManyRequests, kswire.CodeRateLimited, "rate_limited", err}
	case errors.Is(err, ErrBusy):
		return nil, &evalError{http.StatusTooManyRequests, 0, "in_flight", err}
	case err != nil && ctx.Err() != nil: // the client gave up (or the server is stopping) during the delay
		return nil, &evalError{http.StatusServiceUnavailable, 0, "cancelled", err}
	case err != nil:
		return nil, &evalError{http.StatusServiceUnavailable, 0, "limiter", err}
	}
	defer release()
	evals, proof, err := key.Evaluate(req.Elements)
	if err != nil {
		return nil, &evalError{http.StatusBadRequest, kswire.CodeBadRequest, "bad_element", err}
	}
	out, err := kswire.AppendResponse(make([]byte, 0, 12+len(evals)*len(evals[0])+len(proof)),
		&kswire.Response{Suite: key.Suite(), KeyID: key.ID(), Evals: evals, Proof: proof})
	if err != nil {
		return nil, &evalError{http.StatusInternalServerError, 0, "internal", err}
	}
	s.m.evaluations.WithLabelValues(transport).Add(float64(len(evals)))
	return out, nil
}

func (s *Server) refuse(w http.ResponseWriter, transport string, e *evalError) {
	s.m.requests.WithLabelValues(transport, e.reason).Inc()
	s.m.rejections.WithLabelValues(transport, e.reason).Inc()
	if e.status == http.StatusTooManyRequests {
		w.Header().Set("Veil-Reason", e.reason)
	}
	msg := e.err.Error()
	if e.reason == "limiter" { // the detail (Redis's address, its error) is logged, not sent
		msg = "the key server's rate-limit store does not answer"
	}
	http.Error(w, msg, e.status)
}

func (s *Server) handleEvaluate(w http.ResponseWriter, r *http.Request) {
	client, err := s.authorize(r.TLS)
	if err != nil {
		s.refuse(w, "https", &evalError{http.StatusForbidden, 0, "unauthorized", err})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBody))
	if err != nil {
		s.refuse(w, "https", &evalError{http.StatusRequestEntityTooLarge, 0, "too_large", err})
		return
	}
	out, e := s.evaluate(r.Context(), client, "https", body)
	if e != nil {
		switch e.reason {
		case "rate_limited", "in_flight":
		case "limiter": // the server's fault (Redis unreachable), not the client's
			s.warnLimiter("https", client, e.err)
		default:
			s.log.Debug("evaluation refused", "client", client, "reason", e.reason, "err", e.err)
		}
		s.refuse(w, "https", e)
		return
	}
	s.m.requests.WithLabelValues("https", "ok").Inc()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(out)
}

func (s *Server) handleSession(w http.ResponseWriter, r *http.Request) {
	client, err := s.authorize(r.TLS)
	if err != nil {
		s.refuse(w, "session", &evalError{http.StatusForbidden, 0, "unauthorized", err})
		return
	}
	if s.udp == nil {
		http.Error(w, "this key server has no UDP endpoint", http.StatusNotFound)
		return
	}
	g := &kswire.Grant{Expiry: s.cfg.testNow().Add(s.cfg.SessionTTL).Truncate(time.Second),
		MaxDatagram: s.cfg.MaxDatagram}
	rand.Read(g.ID[:])
	rand.Read(g.MACKey[:])
	now := s.cfg.testNow()
	if !s.sess.add(&session{client: client, key: g.MACKey, expiry: g.Expiry, used: now}, g.ID, now, s.cfg.SessionIdle) {
		s.refuse(w, "session", &evalError{http.StatusServiceUnavailable, 0, "too_many_sessions",
			errors.New("too many open sessions (server or client limit); sessions end when closed, idle or past the session TTL")})
		return
	}
	s.m.requests.WithLabelValues("session", "ok").Inc()
	s.log.Debug("udp session opened", "client", client)
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(kswire.AppendGrant(nil, g))
}

// handleSessionClose ends one of the client's own UDP sessions (body: its 16-byte id), so
// that a client that exits frees its slot at once instead of holding it until it idles out.
func (s *Server) handleSessionClose(w http.ResponseWriter, r *http.Request) {
	client, err := s.authorize(r.TLS)
	if err != nil {
		s.refuse(w, "session_close", &evalError{http.StatusForbidden, 0, "unauthorized", err})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, kswire.SessionIDSize+1))
	if err != nil || len(body) != kswire.SessionIDSize {
		s.refuse(w, "session_close", &evalError{http.StatusBadRequest, 0, "malformed",
			fmt.Errorf("want a %d-byte session id", kswire.SessionIDSize)})
		return
	}
	var id [kswire.SessionIDSize]byte
	copy(id[:], body)
	if !s.sess.close(id, client) {
		s.refuse(w, "session_close", &evalError{http.StatusNotFound, 0, "unknown_session", errors.New("no such session of this client")})
		return
	}
	s.m.requests.WithLabelValues("session_close", "ok").Inc()
	s.m.sessions.Set(float64(s.sess.len()))
	w.WriteHeader(http.StatusNoContent)
}
