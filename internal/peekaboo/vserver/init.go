package vserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/pki"
)

// Files in a V-server directory.
const (
	FileDB        = "vserver.db"
	FileCACert    = pki.CACertFile
	FileCAKey     = pki.CAKeyFile
	FileCert      = pki.ServerCertFile
	FileCertKey   = pki.ServerKeyFile
	FileRelayCred = "relay.cred"
	FileAdminCred = "admin.cred"
	AdminUser     = wire.AdminUser
)

// InitOptions say how to set up a V-server directory.
type InitOptions struct {
	RelayCred []byte   // the K-server's relay.cred
	Endpoint  string   // the URL owners and clients reach this V-server at
	Hosts     []string // names/IPs for the server certificate (default: 127.0.0.1, localhost; the endpoint's host is added)
}

// validity of the certificates made here; ServerCertValidity is the server certificate's
// (the `cert` command's default).
const (
	validity           = 10 * 365 * 24 * time.Hour
	ServerCertValidity = validity
)

// Init creates dir: a CA and server certificate, the relay credential, the state file with
// an administrator, and admin.cred (the administrator's credential, to add users).
func Init(dir string, o InitOptions) error {
	if _, err := os.Stat(filepath.Join(dir, FileDB)); err == nil {
		return fmt.Errorf("%s already holds a V-server; refusing to overwrite it", dir)
	}
	if o.Endpoint == "" {
		return errors.New("no endpoint (the https:// URL owners and clients reach this V-server at)")
	}
	rc, _, err := wire.ParseRelayCred(o.RelayCred)
	if err != nil {
		return err
	}
	o.Hosts = tlsconf.CertHosts(o.Hosts, o.Endpoint)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, _, err := pki.InitDir(dir, "veil peekaboo V-server CA", "veil peekaboo V-server", o.Hosts, validity, validity)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, FileRelayCred), o.RelayCred, 0o600, true); err != nil {
		return err
	}
	cred, secret, err := newCredential(AdminUser, o.Endpoint, string(ca.PEM), rc.KServerKey)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, FileAdminCred), cred, 0o600, true); err != nil {
		return err
	}
	db, err := openDB(filepath.Join(dir, FileDB))
	if err != nil {
		return err
	}
	defer db.Close()
	return putUser(db, AdminUser, &wire.UserRecord{SecretHash: sha256.Sum256(secret), Admin: true})
}

// newCredential makes a user credential with a fresh secret.
func newCredential(user, endpoint, ca, kkey string) ([]byte, []byte, error) {
	secret := make([]byte, wire.SecretBytes)
	rand.Read(secret)
	b, err := json.MarshalIndent(wire.UserCred{Version: 1, User: user, Endpoint: endpoint, CA: ca, KServerKey: kkey,
		Secret: base64.RawURLEncoding.EncodeToString(secret)}, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	return append(b, '\n'), secret, nil
}
