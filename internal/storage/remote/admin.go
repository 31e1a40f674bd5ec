package remote

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/veil-project/veil/internal/store/api"
)

// Admin is the administrator's client of a running store: totals, users, gc.
type Admin struct{ b *Backend }

// NewAdmin connects to the service at endpoint with the admin's credential.
func NewAdmin(endpoint string, cred api.Credential) (*Admin, error) {
	b, err := New(endpoint, cred)
	if err != nil {
		return nil, err
	}
	return &Admin{b}, nil
}

// Close releases idle connections.
func (a *Admin) Close() error { return a.b.Close() }

func (a *Admin) route(p string) string { return a.b.base.String() + "/" + api.Version + "/" + p }

// Stats returns the service's totals (GET /v1/stats).
func (a *Admin) Stats(ctx context.Context) (api.Stats, error) {
	var st api.Stats
	err := a.b.call(ctx, http.MethodGet, a.route("stats"), nil, &st)
	return st, err
}

// AddUser creates a user on the running service and returns their credential.
func (a *Admin) AddUser(ctx context.Context, name string, quota int64) (api.Credential, error) {
	body, _ := json.Marshal(api.AddUserRequest{Name: name, Quota: quota})
	var c api.Credential
	if err := a.b.call(ctx, http.MethodPost, a.route("users"), body, &c); err != nil {
		return api.Credential{}, err
	}
	if _, err := api.ParseCredential(c.Marshal()); err != nil {
		return api.Credential{}, err
	}
	return c, nil
}

// Users lists the users.
func (a *Admin) Users(ctx context.Context) ([]api.User, error) {
	var us []api.User
	err := a.b.call(ctx, http.MethodGet, a.route("users"), nil, &us)
	return us, err
}

// RemoveUser deletes a user and all their names.
func (a *Admin) RemoveUser(ctx context.Context, name string) error {
	return a.b.call(ctx, http.MethodDelete, a.route("users/"+url.PathEscape(name)), nil, nil)
}

// GC runs a collection on the running service.
func (a *Admin) GC(ctx context.Context) (api.GCReport, error) {
	var rep api.GCReport
	err := a.b.call(ctx, http.MethodPost, a.route("gc"), []byte{}, &rep)
	return rep, err
}
