package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/open"
	"github.com/veil-project/veil/internal/storewire"
)

// A mistyped storage location never becomes a new, empty store: only init creates a local
// storage directory, and init checks that a remote location answers (with the credential)
// before it writes the profile.

// ErrNoStorage is a local storage location that does not exist.
var ErrNoStorage = errors.New("storage location does not exist")

// existingLocal fails when location is a local directory that is not there (a typo in
// VEIL_STORAGE or the profile): opening it would silently create an empty store.
func existingLocal(location string) error {
	dir, ok := open.LocalDir(location)
	if !ok {
		return nil
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s (a typo in %s or --storage? only 'veil init' creates a local store)", ErrNoStorage, dir, EnvStorage)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("storage location %s is not a directory", dir)
	}
	return nil
}

// checkStorage opens the storage location with the credential init was given and asks it
// one question (list the root), so that init fails now, naming the location, rather than
// at the first put. A local location is created.
func checkStorage(ctx context.Context, location string, storeCred []byte, cred open.Credentials) error {
	if storeCred != nil {
		var sc storewire.Credential
		if err := json.Unmarshal(storeCred, &sc); err != nil {
			return fmt.Errorf("store credential: %w", err)
		}
		cred.Store = &sc
	}
	be, err := open.Open(ctx, location, cred)
	if err != nil {
		return fmt.Errorf("storage %s: %w", location, err)
	}
	if _, err := be.List(ctx, ""); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("storage %s does not answer: %w", location, err)
	}
	return nil
}
