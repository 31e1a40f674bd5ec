package kserver

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/pki"
)

// Files in a K-server directory.
const (
	FileDB        = "kserver.db"
	FileKey       = "kserver.key"
	FilePub       = "kserver.pub"
	FileCACert    = pki.CACertFile
	FileCAKey     = pki.CAKeyFile
	FileCert      = pki.ServerCertFile
	FileCertKey   = pki.ServerKeyFile
	FileRelayCred = "relay.cred"
)

// InitOptions say how to set up a K-server directory.
type InitOptions struct {
	Endpoint string     // the URL the V-server reaches the K-server at (https://host:port)
	Hosts    []string   // names/IPs for the server certificate (default: 127.0.0.1, localhost; the endpoint's host is added)
	PIR      pir.Params // the private-query table (default pir.DefaultParams)
}

// validity of the certificates made here; ServerCertValidity is the server certificate's
// (the `cert` command's default).
const (
	validity           = 10 * 365 * 24 * time.Hour
	ServerCertValidity = validity
)

// Init creates dir with a fresh HPKE key, a CA, a server certificate and the V-server's
// relay credential (relay.cred: hand it to `veil peekaboo vserver init`).
func Init(dir string, o InitOptions) error {
	if _, err := os.Stat(filepath.Join(dir, FileKey)); err == nil {
		return fmt.Errorf("%s already holds a K-server; refusing to overwrite it", dir)
	}
	if o.Endpoint == "" {
		return errors.New("no endpoint (the https:// URL the V-server reaches this K-server at)")
	}
	if !o.PIR.Enabled() {
		o.PIR = pir.DefaultParams
	}
	if err := o.PIR.Check(); err != nil {
		return err
	}
	o.Hosts = tlsconf.CertHosts(o.Hosts, o.Endpoint)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	k, err := wire.GenerateKServerKey()
	if err != nil {
		return err
	}
	kb, err := k.Marshal()
	if err != nil {
		return err
	}
	ca, _, err := pki.InitDir(dir, "veil peekaboo K-server CA", "veil peekaboo K-server", o.Hosts, validity, validity)
	if err != nil {
		return err
	}
	relay, err := ca.IssueClient("vserver", validity)
	if err != nil {
		return err
	}
	pub := k.Public().Marshal()
	cred, err := json.MarshalIndent(wire.RelayCred{Version: 1, Endpoint: o.Endpoint, CA: string(ca.PEM),
		Cert: string(relay.CertPEM), Key: string(relay.KeyPEM), KServerKey: base64.StdEncoding.EncodeToString(pub),
		PIRBits: o.PIR.Bits, PIRSlots: o.PIR.Slots}, "", "  ")
	if err != nil {
		return err
	}
	if _, _, err := wire.ParseRelayCred(cred); err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		perm os.FileMode
	}{
		{FileRelayCred, append(cred, '\n'), 0o600}, {FilePub, pub, 0o644},
		{FileKey, kb, 0o600}, // last: its presence marks a complete directory
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.data, f.perm, true); err != nil {
			return err
		}
	}
	db, err := openDB(filepath.Join(dir, FileDB))
	if err != nil {
		return err
	}
	// A new K-server has answered nothing: its replay high-water mark is 0.
	_, ok, err := readMark(db)
	if err == nil && !ok {
		err = dbReplay{db}.mark(0)
	}
	return errors.Join(err, db.Close())
}
