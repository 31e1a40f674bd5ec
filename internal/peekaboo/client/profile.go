package client

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/peekaboo/wire"
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

// ErrAdminCred refuses to join with the V-server administrator's credential: it adds
// users, and joining it would make its owner a user named "admin".
var ErrAdminCred = errors.New("this is the V-server administrator's credential (admin.cred), which adds users and is not joined: make yourself a user with 'veil peekaboo vserver adduser NAME --admin-cred admin.cred --out NAME.pkb' and join NAME.pkb (with 'veil serve': 'veil serve adduser NAME --dir DIR', then join DIR/invites/NAME.peekaboo)")

// Save stores cred in the profile directory dir with a fresh owner key (mode 0600,
// atomically) and returns the file's path. An existing credential is kept unless force;
// the administrator's credential is refused (ErrAdminCred).
func Save(dir string, cred []byte, force bool) (string, error) {
	if c, _, err := wire.ParseUserCred(cred); err == nil && c.User == wire.AdminUser {
		return "", ErrAdminCred
	}
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

// PseudonymCache is the file in the profile caching opened pseudonym grants.
const PseudonymCache = "peekaboo.pseudonyms"

// CachedPseudonyms returns the client's pseudonyms from the profile's cache, fetching and
// opening the grants (and rewriting the cache) when there is none or refresh is set.
func (c *Client) CachedPseudonyms(ctx context.Context, dir string, refresh bool) ([]ed25519.PrivateKey, error) {
	path := filepath.Join(dir, PseudonymCache)
	if b, err := os.ReadFile(path); err == nil && !refresh {
		var out []ed25519.PrivateKey
		for _, line := range strings.Fields(string(b)) {
			seed, err := base64.StdEncoding.DecodeString(line)
			if err != nil || len(seed) != ed25519.SeedSize {
				return nil, fmt.Errorf("%s: not a pseudonym cache (delete it or use --refresh-pseudonyms)", path)
			}
			out = append(out, ed25519.NewKeyFromSeed(seed))
		}
		return out, nil
	}
	ps, err := c.FetchPseudonyms(ctx)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(base64.StdEncoding.EncodeToString(p.Seed()) + "\n")
	}
	return ps, atomicfile.Write(path, []byte(b.String()), 0o600, true)
}
