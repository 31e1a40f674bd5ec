package remote

import (
	"context"
	"net/http"

	"github.com/veil-project/veil/internal/store/api"
)

// Stats asks a running service for its totals (GET /v1/stats); cred must be the admin's.
func Stats(ctx context.Context, endpoint string, cred api.Credential) (api.Stats, error) {
	b, err := New(endpoint, cred)
	if err != nil {
		return api.Stats{}, err
	}
	defer b.Close()
	var st api.Stats
	err = b.call(ctx, http.MethodGet, b.base.String()+"/"+api.Version+"/stats", nil, &st)
	return st, err
}
