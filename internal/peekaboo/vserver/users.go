package vserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// ErrBusy means the V-server directory is in use by a running server: add users through
// its admin API instead.
var ErrBusy = errors.New("v-server is running (add the user through its admin API)")

// AddUser registers name in dir while no server runs on it and returns the user's
// credential (the only copy of the secret).
func AddUser(dir, name string) ([]byte, error) {
	if err := wire.CheckName(name); err != nil {
		return nil, err
	}
	ab, err := os.ReadFile(filepath.Join(dir, FileAdminCred))
	if err != nil {
		return nil, fmt.Errorf("%s is not a V-server directory: %w", dir, err)
	}
	admin, _, err := wire.ParseUserCred(ab)
	if err != nil {
		return nil, err
	}
	db, err := bbolt.Open(filepath.Join(dir, FileDB), 0o600, &bbolt.Options{Timeout: 200 * time.Millisecond})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cred, secret, err := newCredential(name, admin.Endpoint, admin.CA, admin.KServerKey)
	if err != nil {
		return nil, err
	}
	if err := putUser(db, name, &wire.UserRecord{SecretHash: sha256.Sum256(secret)}); err != nil {
		return nil, err
	}
	return cred, nil
}
