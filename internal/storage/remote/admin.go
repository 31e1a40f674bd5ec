package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/veil-project/veil/internal/storewire"
)

// Admin is the administrator's client of a running store: totals, users, gc.
type Admin struct{ b *Backend }

// NewAdmin connects to the service at endpoint with the admin's credential.
func NewAdmin(endpoint string, cred storewire.Credential) (*Admin, error) {
	b, err := New(endpoint, cred)
	if err != nil {
		return nil, err
	}
	return &Admin{b}, nil
}

// Close releases idle connections.
func (a *Admin) Close() error { return a.b.Close() }

func (a *Admin) route(p string) string { return a.b.base.String() + "/" + storewire.Version + "/" + p }

// Stats returns the service's totals (GET /v1/stats).
func (a *Admin) Stats(ctx context.Context) (storewire.Stats, error) {
	var st storewire.Stats
	err := a.b.call(ctx, http.MethodGet, a.route("stats"), nil, &st)
	return st, err
}

// AddUser creates a user on the running service and returns their credential.
func (a *Admin) AddUser(ctx context.Context, name string, quota int64) (storewire.Credential, error) {
	body, _ := json.Marshal(storewire.AddUserRequest{Name: name, Quota: quota})
	var c storewire.Credential
	if err := a.b.call(ctx, http.MethodPost, a.route("users"), body, &c); err != nil {
		return storewire.Credential{}, err
	}
	if _, err := storewire.ParseCredential(c.Marshal()); err != nil {
		return storewire.Credential{}, err
	}
	return c, nil
}

// Users lists the users.
func (a *Admin) Users(ctx context.Context) ([]storewire.User, error) {
	var us []storewire.User
	err := a.b.call(ctx, http.MethodGet, a.route("users"), nil, &us)
	return us, err
}

// RemoveUser deletes a user and all their names.
func (a *Admin) RemoveUser(ctx context.Context, name string) error {
	return a.b.call(ctx, http.MethodDelete, a.route("users/"+url.PathEscape(name)), nil, nil)
}

// SetQuota changes a user's quota (0: none).
func (a *Admin) SetQuota(ctx context.Context, name string, quota int64) error {
	body, _ := json.Marshal(storewire.SetQuotaRequest{Quota: &quota})
	return a.b.call(ctx, http.MethodPatch, a.route("users/"+url.PathEscape(name)), body, nil)
}

// GC runs a collection on the running service.
func (a *Admin) GC(ctx context.Context) (storewire.GCReport, error) {
	var rep storewire.GCReport
	err := a.b.call(ctx, http.MethodPost, a.route("gc"), []byte{}, &rep)
	return rep, err
}
