package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// RelayCred is the V-server's credential for the K-server (docs/formats/peekaboo-credential.md).
type RelayCred struct {
	Version    int    `json:"veil_peekaboo_relay"`
	Endpoint   string `json:"endpoint"`
	CA         string `json:"ca"`
	Cert       string `json:"cert"`
	Key        string `json:"key"`
	KServerKey string `json:"kserver_key"`
	// The private-query table's geometry (2^PIRBits buckets of PIRSlots slots), shared by
	// both servers; absent (zero): private queries are off.
	PIRBits  int `json:"pir_bits,omitempty"`
	PIRSlots int `json:"pir_slots,omitempty"`
}

// AdminUser is the V-server administrator's user name (admin.cred): made by the V-server's
// init, so no other user has it.
const AdminUser = "admin"

// UserCred is a user's credential for the V-server.
type UserCred struct {
	Version    int    `json:"veil_peekaboo_credential"`
	User       string `json:"user"`
	Secret     string `json:"secret"`
	Endpoint   string `json:"endpoint"`
	CA         string `json:"ca"`
	KServerKey string `json:"kserver_key"`
	OwnerKey   string `json:"owner_key,omitempty"`
	ClientKey  string `json:"client_key,omitempty"` // HPKE private key for pseudonym grants (base64)
}

func credErr(what, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrMalformed, what, fmt.Sprintf(format, a...))
}

func checkCommon(what, endpoint, ca, kkey string) (*KServerPub, error) {
	if !strings.HasPrefix(endpoint, "https://") {
		return nil, credErr(what, "endpoint %q is not an https:// URL", endpoint)
	}
	if !strings.Contains(ca, "-----BEGIN CERTIFICATE-----") {
		return nil, credErr(what, "ca is not a PEM certificate")
	}
	kb, err := base64.StdEncoding.DecodeString(kkey)
	if err != nil {
		return nil, credErr(what, "kserver_key is not base64")
	}
	return ParseKServerPub(kb)
}

// ParseRelayCred parses and checks a relay credential; it returns the K-server key too.
func ParseRelayCred(b []byte) (*RelayCred, *KServerPub, error) {
	var c RelayCred
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, nil, credErr("relay credential", "not JSON: %v", err)
	}
	if c.Version != 1 {
		return nil, nil, credErr("relay credential", "veil_peekaboo_relay %d, want 1", c.Version)
	}
	if !strings.Contains(c.Cert, "CERTIFICATE") || !strings.Contains(c.Key, "PRIVATE KEY") {
		return nil, nil, credErr("relay credential", "cert or key is not PEM")
	}
	pub, err := checkCommon("relay credential", c.Endpoint, c.CA, c.KServerKey)
	if err != nil {
		return nil, nil, err
	}
	return &c, pub, nil
}

// SecretBytes is the size of a user secret and of an owner key.
const SecretBytes = 32

func decodeSecret(what, field, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != SecretBytes {
		return nil, credErr(what, "%s is not %d bytes of unpadded base64url", field, SecretBytes)
	}
	return b, nil
}

// ParseUserCred parses and checks a user credential; it returns the K-server key too.
func ParseUserCred(b []byte) (*UserCred, *KServerPub, error) {
	const what = "peekaboo credential"
	var c UserCred
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, nil, credErr(what, "not JSON: %v", err)
	}
	if c.Version != 1 {
		return nil, nil, credErr(what, "veil_peekaboo_credential %d, want 1", c.Version)
	}
	if err := CheckName(c.User); err != nil {
		return nil, nil, credErr(what, "%v", err)
	}
	if _, err := decodeSecret(what, "secret", c.Secret); err != nil {
		return nil, nil, err
	}
	if c.OwnerKey != "" {
		if _, err := decodeSecret(what, "owner_key", c.OwnerKey); err != nil {
			return nil, nil, err
		}
	}
	if c.ClientKey != "" {
		if _, err := c.ClientKeyPair(); err != nil {
			return nil, nil, credErr(what, "client_key: %v", err)
		}
	}
	pub, err := checkCommon(what, c.Endpoint, c.CA, c.KServerKey)
	if err != nil {
		return nil, nil, err
	}
	return &c, pub, nil
}

// ClientKeyPair decodes the client's HPKE key (nil when absent).
func (c *UserCred) ClientKeyPair() (*KServerKey, error) {
	if c.ClientKey == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(c.ClientKey)
	if err != nil {
		return nil, err
	}
	return ParseKServerKey(b)
}

// OwnerKeyBytes decodes the owner key (nil when absent).
func (c *UserCred) OwnerKeyBytes() []byte {
	b, _ := base64.RawURLEncoding.DecodeString(c.OwnerKey)
	return b
}
