package kswire

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/veil-project/veil/internal/oprf"
)

// CredentialVersion is the version of the credential file format.
const CredentialVersion = 1

// Credential is everything a client needs to use a key server, in one JSON file written
// by 'veil keyserver client add' (docs/formats/ks-credential.md).
type Credential struct {
	Version    int       `json:"version"`
	Name       string    `json:"name"`
	Suite      string    `json:"suite"`
	CurrentKey string    `json:"current_key"`
	Keys       []CredKey `json:"keys"`
	CAPEM      string    `json:"ca_pem"`
	CertPEM    string    `json:"cert_pem"`
	KeyPEM     string    `json:"key_pem"`
	URL        string    `json:"url"`
	UDP        string    `json:"udp,omitempty"`
}

// CredKey is one pinned key server public key.
type CredKey struct {
	ID     string `json:"id"`
	Public string `json:"public"` // standard base64
}

// Parsed is a checked credential, ready to use.
type Parsed struct {
	Credential
	SuiteID oprf.SuiteID
	Keys    map[oprf.KeyID]oprf.PublicKey
	Current oprf.PublicKey
	Cert    tls.Certificate
	CAs     *x509.CertPool
}

// MarshalCredential encodes c as indented JSON.
func MarshalCredential(c *Credential) ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseCredential decodes and checks a credential file: every key must parse and match
// its id, the certificate, private key and CA must parse, and the URL must be https.
func ParseCredential(b []byte) (*Parsed, error) {
	var p Parsed
	if err := json.Unmarshal(b, &p.Credential); err != nil {
		return nil, fmt.Errorf("%w: credential is not JSON: %v", ErrMalformed, err)
	}
	c := &p.Credential
	if c.Version != CredentialVersion {
		return nil, fmt.Errorf("%w: credential version %d, want %d", ErrMalformed, c.Version, CredentialVersion)
	}
	s, err := oprf.ParseSuite(c.Suite)
	if err != nil || c.Suite == "" {
		return nil, fmt.Errorf("%w: credential suite %q", ErrMalformed, c.Suite)
	}
	p.SuiteID = s
	p.Keys = make(map[oprf.KeyID]oprf.PublicKey, len(c.Keys))
	for _, k := range c.Keys {
		raw, err := base64.StdEncoding.DecodeString(k.Public)
		if err != nil {
			return nil, fmt.Errorf("%w: key %s: public key is not base64", ErrMalformed, k.ID)
		}
		pub, err := oprf.ParsePublicKey(s, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: key %s: %v", ErrMalformed, k.ID, err)
		}
		if pub.ID().String() != k.ID {
			return nil, fmt.Errorf("%w: key id %s does not match its public key (%s)", ErrMalformed, k.ID, pub.ID())
		}
		p.Keys[pub.ID()] = pub
	}
	cur, err := oprf.ParseKeyID(c.CurrentKey)
	if err != nil || p.Keys[cur] == nil {
		return nil, fmt.Errorf("%w: current key %q is not among the credential's keys", ErrMalformed, c.CurrentKey)
	}
	p.Current = p.Keys[cur]
	if p.Cert, err = tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM)); err != nil {
		return nil, fmt.Errorf("%w: client certificate: %v", ErrMalformed, err)
	}
	p.CAs = x509.NewCertPool()
	if !p.CAs.AppendCertsFromPEM([]byte(c.CAPEM)) {
		return nil, fmt.Errorf("%w: no CA certificate in ca_pem", ErrMalformed)
	}
	if u, err := url.Parse(c.URL); err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%w: url %q is not https://host:port", ErrMalformed, c.URL)
	}
	return &p, nil
}
