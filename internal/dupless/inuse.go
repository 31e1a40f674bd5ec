package dupless

import (
	"context"
	"errors"

	"github.com/veil-project/veil/internal/storage"
)

// InUse reports whether a storage location already holds a veil namespace (its key check,
// written by the first command that stored anything). A new master key there could read
// none of it and would see an empty space: init refuses such a location.
func InUse(ctx context.Context, be storage.Backend) (bool, error) {
	_, err := be.Stat(ctx, veilDir, keyCheck)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
