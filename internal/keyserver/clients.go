package keyserver

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/pki"
)

// ClientInfo is one entry of the client registry (clients.json).
type ClientInfo struct {
	Name    string     `json:"name"`
	Serial  string     `json:"serial"` // certificate serial number, hex
	Added   time.Time  `json:"added"`
	Expires time.Time  `json:"expires"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

type registry struct {
	Version int          `json:"version"`
	Clients []ClientInfo `json:"clients"`
}

// AddOptions configures a new client credential.
type AddOptions struct {
	URL      string        // HTTPS URL in the credential (default: the one recorded at init)
	UDP      string        // UDP address in the credential (default: the one recorded at init)
	Validity time.Duration // certificate lifetime (default one year)
}

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// lockRegistry takes the registry's lock (an exclusive flock on clients.lock) for a
// read-modify-write of clients.json: without it, concurrent 'client add', 'revoke' and
// 'veil serve' user additions each wrote back what they had read, and lost the others'
// updates (found by review: 8 parallel adds left 1-2 clients; a revoke beside an add could
// be undone). The returned function releases it.
func lockRegistry(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "clients.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the client registry: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the client registry: %w", err)
	}
	return func() { f.Close() }, nil
}

func readRegistry(dir string) (*registry, error) {
	var r registry
	if err := readJSON(filepath.Join(dir, fileClients), &r); err != nil {
		return nil, err
	}
	if r.Version != metaVersion { // a registry of another version may mean something else by its fields
		return nil, fmt.Errorf("%s: version %d, want %d", fileClients, r.Version, metaVersion)
	}
	return &r, nil
}

// AddClient issues a client certificate for name and returns the credential file
// (kswire.Credential, JSON) holding everything the client needs. Names are unique, even
// after revocation.
func AddClient(dir, name string, opts AddOptions) ([]byte, error) {
	var out []byte
	err := addClient(dir, name, opts, func(b []byte) error { out = b; return nil })
	return out, err
}

// AddClientFile is AddClient writing the credential atomically to path (mode 0600). The
// client is registered only once the file is written.
func AddClientFile(dir, name, path string, opts AddOptions) error {
	return addClient(dir, name, opts, func(b []byte) error { return writeFileAtomic(path, b, 0o600) })
}

// addClient issues the credential, hands it to deliver, and registers the client only if
// deliver succeeded.
func addClient(dir, name string, opts AddOptions, deliver func([]byte) error) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("client name %q: use 1-64 letters, digits, '.', '_' or '-'", name)
	}
	m, err := readMeta(dir)
	if err != nil {
		return err
	}
	unlock, err := lockRegistry(dir)
	if err != nil {
		return err
	}
	defer unlock()
	reg, err := readRegistry(dir)
	if err != nil {
		return err
	}
	for _, c := range reg.Clients {
		if c.Name == name {
			return fmt.Errorf("%w: client %q", ErrExists, name)
		}
	}
	r, err := loadRing(dir, m)
	if err != nil {
		return err
	}
	c, err := pki.LoadCA(filepath.Join(dir, fileCACert), filepath.Join(dir, fileCAKey))
	if err != nil {
		return err
	}
	if opts.Validity <= 0 {
		opts.Validity = DefaultValidity
	}
	iss, err := c.IssueClient(name, opts.Validity)
	if err != nil {
		return err
	}
	cred := &kswire.Credential{Version: kswire.CredentialVersion, Name: name, Suite: m.Suite,
		CurrentKey: m.CurrentKey, CAPEM: string(c.PEM), CertPEM: string(iss.CertPEM),
		KeyPEM: string(iss.KeyPEM), URL: m.URL, UDP: m.UDP}
	if opts.URL != "" {
		cred.URL = opts.URL
	}
	if opts.UDP != "" {
		cred.UDP = opts.UDP
	}
	for _, id := range m.Keys {
		for kid, k := range r.keys {
			if kid.String() == id {
				raw, err := k.Public().MarshalBinary()
				if err != nil {
					return err
				}
				cred.Keys = append(cred.Keys, kswire.CredKey{ID: id, Public: base64.StdEncoding.EncodeToString(raw)})
			}
		}
	}
	out, err := kswire.MarshalCredential(cred)
	if err != nil {
		return err
	}
	if err := deliver(out); err != nil {
		return fmt.Errorf("write credential: %w", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	reg.Clients = append(reg.Clients, ClientInfo{Name: name, Serial: iss.Serial.Text(16), Added: now,
		Expires: now.Add(opts.Validity)})
	return writeJSON(filepath.Join(dir, fileClients), reg)
}

// ListClients returns the registry in the order clients were added.
func ListClients(dir string) ([]ClientInfo, error) {
	if _, err := readMeta(dir); err != nil {
		return nil, err
	}
	reg, err := readRegistry(dir)
	if err != nil {
		return nil, err
	}
	return reg.Clients, nil
}

// RevokeClient marks name revoked: its certificate is refused from then on (a running
// server notices within its reload interval) and all its UDP sessions stop answering.
func RevokeClient(dir, name string) error {
	if _, err := readMeta(dir); err != nil {
		return err
	}
	unlock, err := lockRegistry(dir)
	if err != nil {
		return err
	}
	defer unlock()
	reg, err := readRegistry(dir)
	if err != nil {
		return err
	}
	for i := range reg.Clients {
		if reg.Clients[i].Name == name {
			if reg.Clients[i].Revoked == nil {
				now := time.Now().UTC().Truncate(time.Second)
				reg.Clients[i].Revoked = &now
			}
			return writeJSON(filepath.Join(dir, fileClients), reg)
		}
	}
	return fmt.Errorf("%w: client %q", ErrNotFound, name)
}
