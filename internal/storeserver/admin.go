package storeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// The admin API manages a running store (whose database no other process can open):
// GET /v1/stats, POST /v1/users, GET /v1/users, DELETE /v1/users/{name},
// PATCH /v1/users/{name} (the quota), POST /v1/gc.

func (s *Service) handleStats(w http.ResponseWriter, r *http.Request, _ apiReq) {
	st, err := s.Stats()
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Service) handleUsers(w http.ResponseWriter, r *http.Request, _ apiReq) {
	users, err := s.Users()
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := make([]storewire.User, len(users))
	for i, u := range users {
		out[i] = storewire.User{Name: u.Name, Admin: u.Admin, Quota: u.Quota, Used: u.Used, Created: u.Created.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) handleRemoveUser(w http.ResponseWriter, r *http.Request, a apiReq) {
	if err := s.RemoveUser(a.name); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Service) handleGC(w http.ResponseWriter, r *http.Request, _ apiReq) {
	rep, err := s.GC(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, storewire.GCReport(rep))
}

func (s *Service) handleAddUser(w http.ResponseWriter, r *http.Request, _ apiReq) {
	var req storewire.AddUserRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Quota < 0 {
		writeJSON(w, http.StatusBadRequest, storewire.Error{Code: storewire.CodeBadRequest, Message: "body is not a JSON user request"})
		return
	}
	cred, err := s.AddUser(req.Name, WithQuota(req.Quota))
	if errors.Is(err, storewire.ErrBadCredential) {
		err = fmt.Errorf("%w: %v", storage.ErrInvalidName, err)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, cred)
}

func (s *Service) handleSetQuota(w http.ResponseWriter, r *http.Request, a apiReq) {
	var req storewire.SetQuotaRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Quota == nil || *req.Quota < 0 {
		writeJSON(w, http.StatusBadRequest, storewire.Error{Code: storewire.CodeBadRequest, Message: "body is not a JSON quota request ({\"quota\": bytes, 0 for none})"})
		return
	}
	if err := s.SetQuota(a.name, *req.Quota); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
