package keyserver

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/oprf"
	"github.com/veil-project/veil/internal/pki"
)

// Errors callers branch on.
var (
	ErrExists      = errors.New("keyserver: already exists")
	ErrNotFound    = errors.New("keyserver: not found")
	ErrNotInit     = errors.New("keyserver: directory is not initialized (run 'veil keyserver init')")
	ErrRateLimited = errors.New("keyserver: rate limited")
	ErrBusy        = errors.New("keyserver: a query of this client is already in flight")
)

const (
	fileMeta     = "ks.json"
	fileClients  = "clients.json"
	fileCACert   = pki.CACertFile
	fileCAKey    = pki.CAKeyFile
	fileSrvCert  = pki.ServerCertFile
	fileSrvKey   = pki.ServerKeyFile
	fileRateDB   = "ratelimit.db"
	dirKeys      = "keys"
	metaVersion  = 1
	caValidity   = 20 * 365 * 24 * time.Hour
	defaultHTTPS = "127.0.0.1:7443"
	defaultUDP   = "127.0.0.1:7444"
)

// meta is ks.json.
type meta struct {
	Version    int      `json:"version"`
	Suite      string   `json:"suite"`
	CurrentKey string   `json:"current_key"`
	Keys       []string `json:"keys"`
	URL        string   `json:"url"`
	UDP        string   `json:"udp"`
	Hosts      []string `json:"hosts"`
}

// Defaults of InitOptions, Rotate and AddOptions.
var (
	DefaultSuite    = oprf.Ristretto255.String()
	DefaultHosts    = []string{"127.0.0.1", "::1", "localhost"}
	DefaultValidity = 365 * 24 * time.Hour // of a client certificate
)

// ServerCertValidity is the lifetime of the server certificate init makes (and `veil
// keyserver cert` by default).
const ServerCertValidity = 5 * 365 * 24 * time.Hour

// DefaultRSABits is the RSA modulus size of the rsa suite unless told otherwise.
const DefaultRSABits = oprf.MinRSABits

// InitOptions configures a new key server directory.
type InitOptions struct {
	Suite   string    // "ristretto255" (default) or "rsa"
	RSABits int       // RSA modulus size for the rsa suite (default 2048, minimum 2048)
	Hosts   []string  // names and IPs in the server certificate (default 127.0.0.1, ::1, localhost)
	URL     string    // HTTPS URL written into credentials (default https://127.0.0.1:7443)
	UDP     string    // UDP address written into credentials (default 127.0.0.1:7444; "-" for none)
	Rand    io.Reader // key randomness (default crypto/rand)
}

// Init creates a key server directory: the first key, the CA, the server certificate and
// an empty client registry. It refuses a directory that is already initialised.
func Init(dir string, opts InitOptions) error {
	suite, err := oprf.ParseSuite(opts.Suite)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, fileMeta)); err == nil {
		return fmt.Errorf("%w: %s is already a key server directory", ErrExists, dir)
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if len(opts.Hosts) == 0 {
		opts.Hosts = DefaultHosts
	}
	if opts.URL == "" {
		opts.URL = "https://" + defaultHTTPS
	}
	switch opts.UDP {
	case "":
		opts.UDP = defaultUDP
	case "-":
		opts.UDP = ""
	}
	if err := os.MkdirAll(filepath.Join(dir, dirKeys), 0o700); err != nil {
		return err
	}
	key, err := oprf.GenerateKey(suite, opts.Rand, opts.RSABits)
	if err != nil {
		return err
	}
	if err := writeKey(dir, key); err != nil {
		return err
	}
	if _, _, err := pki.InitDir(dir, "veil key server CA", "veil key server", opts.Hosts, caValidity, ServerCertValidity); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, fileClients), &registry{Version: metaVersion}); err != nil {
		return err
	}
	// ks.json last: its presence marks a complete directory.
	return writeJSON(filepath.Join(dir, fileMeta), &meta{Version: metaVersion, Suite: suite.String(),
		CurrentKey: key.ID().String(), Keys: []string{key.ID().String()}, URL: opts.URL, UDP: opts.UDP, Hosts: opts.Hosts})
}

func writeKey(dir string, k oprf.PrivateKey) error {
	b, err := k.MarshalBinary()
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, dirKeys, k.ID().String()+".key"), b, 0o600)
}

func readMeta(dir string) (*meta, error) {
	var m meta
	if err := readJSON(filepath.Join(dir, fileMeta), &m); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNotInit, dir)
		}
		return nil, err
	}
	if m.Version != metaVersion {
		return nil, fmt.Errorf("%s: version %d, want %d", fileMeta, m.Version, metaVersion)
	}
	return &m, nil
}

// ring is the loaded key ring.
type ring struct {
	suite   oprf.SuiteID
	keys    map[oprf.KeyID]oprf.PrivateKey
	current oprf.PrivateKey
}

func loadRing(dir string, m *meta) (*ring, error) {
	s, err := oprf.ParseSuite(m.Suite)
	if err != nil {
		return nil, err
	}
	r := &ring{suite: s, keys: map[oprf.KeyID]oprf.PrivateKey{}}
	for _, id := range m.Keys {
		b, err := os.ReadFile(filepath.Join(dir, dirKeys, id+".key"))
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", id, err)
		}
		k, err := oprf.ParsePrivateKey(s, b)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", id, err)
		}
		if k.ID().String() != id {
			return nil, fmt.Errorf("key %s: file holds key %s", id, k.ID())
		}
		r.keys[k.ID()] = k
		if id == m.CurrentKey {
			r.current = k
		}
	}
	if r.current == nil {
		return nil, fmt.Errorf("%s: current key %s is not in the ring", fileMeta, m.CurrentKey)
	}
	return r, nil
}

// Rotate adds a new key and makes it current; the old keys keep answering. It returns
// the new key id. A running server picks the change up within its reload interval.
func Rotate(dir string, rsaBits int) (string, error) {
	m, err := readMeta(dir)
	if err != nil {
		return "", err
	}
	s, err := oprf.ParseSuite(m.Suite)
	if err != nil {
		return "", err
	}
	k, err := oprf.GenerateKey(s, rand.Reader, rsaBits)
	if err != nil {
		return "", err
	}
	if err := writeKey(dir, k); err != nil {
		return "", err
	}
	m.Keys = append(m.Keys, k.ID().String())
	m.CurrentKey = k.ID().String()
	if err := writeJSON(filepath.Join(dir, fileMeta), m); err != nil {
		return "", err
	}
	return m.CurrentKey, nil
}
