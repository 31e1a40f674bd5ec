package client

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/veil-project/veil/internal/atomicfile"
)

// CredFile is the Peekaboo credential's name in a veil profile directory.
const CredFile = "peekaboo.cred"

// Open makes a client from the credential in the profile directory dir.
func Open(dir string) (*Client, error) {
	b, err := os.ReadFile(filepath.Join(dir, CredFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no peekaboo credential in %s (run 'veil peekaboo join FILE' with the file from the V-server's administrator)", dir)
	}
	if err != nil {
		return nil, err
	}
	return New(b)
}

// Save stores cred in the profile directory dir with a fresh owner key (mode 0600,
// atomically) and returns the file's path. An existing credential is kept unless force.
func Save(dir string, cred []byte, force bool) (string, error) {
	path := filepath.Join(dir, CredFile)
	if _, err := os.Stat(path); err == nil && !force {
		return "", fmt.Errorf("%s exists (its owner key opens your pairs' keys); --force replaces it", path)
	}
	b, err := Join(cred)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return path, atomicfile.Write(path, b, 0o600, true)
}
