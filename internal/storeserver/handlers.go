package storeserver

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

var errUnauthorized = storewire.ErrUnauthorized

// headerIntegrity is the trailer of a GET: "ok" when the content matched its hash.
const headerIntegrity = "Veil-Integrity"

func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// writeErr answers with the error's code; internal errors are logged, not disclosed.
func (s *Service) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	err = classifyFault(err)
	code, status := storewire.Classify(err)
	msg := err.Error()
	log := func(level slog.Level, what string) {
		s.cfg.Logger.Log(context.Background(), level, what, "method", r.Method, "path", r.URL.EscapedPath(), "err", err)
	}
	if code == storewire.CodeInternal && clientGone(r, err) {
		// The client went away mid-request: its fault, not the server's, and no one reads
		// the answer. Logged at debug level, counted as its own code.
		log(slog.LevelDebug, "client disconnected")
		code, status, msg = codeClientGone, 499, "the request ended before its body"
	}
	switch code {
	case storewire.CodeInternal:
		log(slog.LevelError, "internal error")
		msg = "internal error"
	case storewire.CodeNoSpace:
		log(slog.LevelError, "out of space")
		msg = storewire.ErrNoSpace.Error() // the detail names server paths: logged only
	case storewire.CodeUnavailable:
		log(slog.LevelWarn, "storage unavailable") // blob store or metadata database
		msg = storewire.ErrUnavailable.Error()
		w.Header().Set("Retry-After", strconv.Itoa(storewire.RetryAfterSeconds))
	case storewire.CodeIntegrity:
		log(slog.LevelError, "integrity failure")
		msg = "the stored content is damaged (integrity check failed)"
	}
	s.metrics.errors.WithLabelValues(code).Inc()
	writeJSON(w, status, storewire.Error{Code: code, Message: msg})
}

// codeClientGone counts requests whose client disconnected (metrics label; the status
// 499 is never seen by that client).
const codeClientGone = "client_gone"

// clientGone reports whether err comes from the client leaving: its request's context
// ended or its body broke off.
func clientGone(r *http.Request, err error) bool {
	return r.Context().Err() != nil || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

func (s *Service) handlePut(w http.ResponseWriter, r *http.Request, a apiReq) {
	ns, dir, name := a.ns, a.dir, a.name
	size := r.ContentLength
	if d := r.Header.Get(storewire.HeaderDeclaredLength); d != "" {
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 || size >= 0 && n != size {
			writeJSON(w, http.StatusBadRequest, storewire.Error{Code: storewire.CodeBadRequest, Message: "bad " + storewire.HeaderDeclaredLength + " header"})
			return
		}
		size = n
	}
	if err := ns.Put(verifyCtx(r), dir, name, r.Body, size); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// verifyCtx is r's context, marked storage.WithVerify when r asks for it
// (storewire.HeaderVerifyStored).
func verifyCtx(r *http.Request) context.Context {
	if r.Header.Get(storewire.HeaderVerifyStored) == "1" {
		return storage.WithVerify(r.Context())
	}
	return r.Context()
}

// handleGet streams the content (chunked) and ends with the Veil-Integrity trailer, so a
// corruption found only at the end still reaches the client as an integrity error.
func (s *Service) handleGet(w http.ResponseWriter, r *http.Request, a apiReq) {
	ns, dir, name := a.ns, a.dir, a.name
	rc, e, err := ns.open(r.Context(), dir, name)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Trailer", headerIntegrity)
	h.Set("Content-Type", "application/octet-stream")
	h.Set(storewire.HeaderContentSHA256, hex.EncodeToString(e.hash[:]))
	h.Set("Veil-Content-Length", strconv.FormatInt(e.size, 10))
	h.Set("Last-Modified", time.Unix(0, e.modTime).UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusOK)
	buf := copyBufs.Get().(*[]byte)
	_, err = io.CopyBuffer(w, rc, *buf)
	copyBufs.Put(buf)
	switch {
	case err == nil:
		h.Set(headerIntegrity, "ok")
	case errors.Is(err, storage.ErrIntegrity):
		s.cfg.Logger.Error("integrity failure", "err", err)
		h.Set(headerIntegrity, "failed")
	default:
		panic(http.ErrAbortHandler) // the client must not see a clean end
	}
}

func (s *Service) handleDelete(w http.ResponseWriter, r *http.Request, a apiReq) {
	ns, dir, name := a.ns, a.dir, a.name
	if err := ns.Delete(r.Context(), dir, name); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleStat(w http.ResponseWriter, r *http.Request, a apiReq) {
	ns, dir, name := a.ns, a.dir, a.name
	i, err := ns.Stat(r.Context(), dir, name)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, storewire.FromInfo(i))
}

func entries(infos []storage.Info) []storewire.Entry {
	out := make([]storewire.Entry, len(infos))
	for i, in := range infos {
		out[i] = storewire.FromInfo(in)
	}
	return out
}

func (s *Service) handleList(w http.ResponseWriter, r *http.Request, a apiReq) {
	infos, err := a.ns.List(r.Context(), a.dir)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entries(infos))
}

func (s *Service) handleSearch(w http.ResponseWriter, r *http.Request, a apiReq) {
	infos, err := a.ns.Search(r.Context(), a.dir, r.URL.Query().Get("name"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, entries(infos))
}

func (s *Service) handleCreate(w http.ResponseWriter, r *http.Request, a apiReq) {
	if err := a.ns.Create(r.Context(), a.dir); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// maxJSONBody bounds request bodies that are JSON (move, admin).
const maxJSONBody = storewire.MaxMoveBody

// handleMove moves, unconditionally or (with a match, session 14) only while the source
// is a file of that content (Namespace.MoveMatch).
func (s *Service) handleMove(w http.ResponseWriter, r *http.Request, a apiReq) {
	m, match, err := storewire.ReadMove(r.Body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, storewire.Error{Code: storewire.CodeBadRequest, Message: "move: " + err.Error()})
		return
	}
	if match != nil {
		err = a.ns.MoveMatch(r.Context(), m.SrcDir, m.SrcName, m.DstDir, m.DstName, *match)
	} else {
		err = a.ns.Move(r.Context(), m.SrcDir, m.SrcName, m.DstDir, m.DstName)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
