package ksclient

import (
	"fmt"
	"os"

	"github.com/veil-project/veil/internal/kswire"
)

// Credential is a parsed credential file (written by 'veil keyserver client add'): the
// client certificate, the key server CA, the suite, the pinned public keys and the key
// server's addresses.
type Credential struct {
	p *kswire.Parsed
}

// LoadCredential reads and checks a credential file.
func LoadCredential(path string) (*Credential, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load credential: %w", err)
	}
	c, err := ParseCredential(b)
	if err != nil {
		return nil, fmt.Errorf("load credential %s: %w", path, err)
	}
	return c, nil
}

// ParseCredential checks a credential held in memory.
func ParseCredential(b []byte) (*Credential, error) {
	p, err := kswire.ParseCredential(b)
	if err != nil {
		return nil, err
	}
	return &Credential{p: p}, nil
}

// Name is the client name the credential was issued to.
func (c *Credential) Name() string { return c.p.Name }

// URL is the key server's HTTPS URL recorded in the credential.
func (c *Credential) URL() string { return c.p.URL }

// UDPAddr is the key server's UDP address recorded in the credential ("" if none).
func (c *Credential) UDPAddr() string { return c.p.UDP }

// Suite is the OPRF suite name.
func (c *Credential) Suite() string { return c.p.Suite }
