package storewire

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"regexp"
)

// CredentialVersion is the version of the credential file format.
const CredentialVersion = 1

// SecretSize is the length of a user's secret in bytes.
const SecretSize = 32

// ErrBadCredential is a credential file that does not parse.
var ErrBadCredential = errors.New("bad credential")

// Credential is what a user needs to reach their namespace: user name, secret, the CA
// certificate that signed the server's TLS certificate (pinned by the client), and
// optionally the service's address. It is stored as one JSON file
// (docs/formats/store-credential.md).
type Credential struct {
	Version  int    `json:"veil_store_credential"`
	User     string `json:"user"`
	Secret   string `json:"secret"`             // base64url, no padding, SecretSize bytes
	CA       string `json:"ca,omitempty"`       // PEM certificate of the service's CA
	Endpoint string `json:"endpoint,omitempty"` // e.g. "https://host:7480"
}

var userRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckUser validates a user name: 1-64 of a-z 0-9 . _ -, starting with a letter or digit.
func CheckUser(name string) error {
	if !userRE.MatchString(name) {
		return fmt.Errorf("%w: user name %q must be 1-64 of a-z, 0-9, '.', '_', '-'", ErrBadCredential, name)
	}
	return nil
}

// ParseCredential decodes and validates a credential file's bytes.
func ParseCredential(b []byte) (Credential, error) {
	var c Credential
	if err := json.Unmarshal(b, &c); err != nil {
		return Credential{}, fmt.Errorf("%w: %v", ErrBadCredential, err)
	}
	if c.Version != CredentialVersion {
		return Credential{}, fmt.Errorf("%w: version %d, want %d", ErrBadCredential, c.Version, CredentialVersion)
	}
	if err := CheckUser(c.User); err != nil {
		return Credential{}, err
	}
	if _, err := c.SecretBytes(); err != nil {
		return Credential{}, err
	}
	if c.CA != "" {
		if _, err := c.CAPool(); err != nil {
			return Credential{}, err
		}
	}
	return c, nil
}

// LoadCredential reads and parses a credential file.
func LoadCredential(path string) (Credential, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Credential{}, fmt.Errorf("credential: %w", err)
	}
	c, err := ParseCredential(b)
	if err != nil {
		return Credential{}, fmt.Errorf("credential %s: %w", path, err)
	}
	return c, nil
}

// Marshal encodes the credential as its file (indented JSON and a newline).
func (c Credential) Marshal() []byte {
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// SecretBytes decodes the secret.
func (c Credential) SecretBytes() ([]byte, error) {
	s, err := base64.RawURLEncoding.DecodeString(c.Secret)
	if err != nil || len(s) != SecretSize {
		return nil, fmt.Errorf("%w: secret must be %d bytes of unpadded base64url", ErrBadCredential, SecretSize)
	}
	return s, nil
}

// CAPool returns a certificate pool holding only the credential's CA.
func (c Credential) CAPool() (*x509.CertPool, error) {
	blk, _ := pem.Decode([]byte(c.CA))
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%w: ca is not a PEM certificate", ErrBadCredential)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: ca: %v", ErrBadCredential, err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool, nil
}
