package storeserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/storage"
)

// Init creates a store in dir: the database, the blob and temp folders, a self-signed CA and
// a server certificate for localhost, 127.0.0.1, ::1, this host's name and any extra hosts
// (names or IP addresses), and the admin credential (dir/admin.cred, mode 0600).
func Init(dir string, hosts ...string) error { return InitBlobs(dir, LocalBlobs, nil, hosts...) }

// InitBlobs is Init for a store whose content lives at location (LocalBlobs, or the
// location blobs was opened from), recorded in the data directory.
func InitBlobs(dir, location string, blobs storage.Backend, hosts ...string) error {
	return InitDB(dir, "", location, blobs, hosts...)
}

// InitDB is InitBlobs with the metadata in the PostgreSQL database at db (a postgres://
// URL without a password; "" keeps it in meta.db). It creates the tables, refusing a
// database that has them: further nodes get a copy of this data directory instead.
func InitDB(dir, db, location string, blobs storage.Backend, hosts ...string) error {
	if err := checkLocation(location); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	for _, f := range []string{dbFile, metaLocationFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return fmt.Errorf("init %s: %w: already a store", dir, storage.ErrExists)
		}
	}
	if db != "" {
		if err := checkDB(db); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		if err := createSchema(context.Background(), db); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	for _, d := range []string{dir, filepath.Join(dir, tmpName), filepath.Join(dir, tlsName)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if location == LocalBlobs { // an S3-backed store has no blobs/ (session 16)
		if err := makeBlobDirs(filepath.Join(dir, blobName)); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if err := writeTLS(filepath.Join(dir, tlsName), hosts); err != nil {
		return fmt.Errorf("init: tls: %w", err)
	}
	if err := writeLocation(dir, location); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if db != "" {
		if err := writeMetaDB(dir, db); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	} else {
		bdb, _, err := openDB(filepath.Join(dir, dbFile), true)
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
		bdb.Close()
	}
	cfg := Config{}
	if location != LocalBlobs {
		cfg.Blobs, cfg.BlobLocation = blobs, location
	}
	s, err := Open(dir, cfg)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer s.Close()
	cred, err := s.AddUser(AdminUser, withAdmin())
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return atomicfile.Write(filepath.Join(dir, AdminCredentialFile), cred.Marshal(), 0o600, true)
}

// makeBlobDirs makes the 256 directories of content on disk (blobs/xx).
func makeBlobDirs(root string) error {
	for i := range 256 {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("%02x", i)), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// writeTLS generates the store's CA and a server certificate signed by it (internal/pki)
// for localhost, the loopback addresses, this host's name and hosts.
func writeTLS(dir string, hosts []string) error {
	caIss, err := pki.NewCA("veil store CA", 10*365*24*time.Hour)
	if err != nil {
		return err
	}
	if err := pki.WritePair(dir, pki.CACertFile, pki.CAKeyFile, caIss); err != nil {
		return err
	}
	ca, err := pki.LoadCA(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
	if err != nil {
		return err
	}
	all := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		all = append(all, h)
	}
	srv, err := ca.IssueServer("veil store", append(all, hosts...), ServerCertValidity)
	if err != nil {
		return err
	}
	return pki.WritePair(dir, pki.ServerCertFile, pki.ServerKeyFile, srv)
}

// caPEM is the store's CA certificate (given to users in their credentials).
func (s *Service) caPEM() ([]byte, error) {
	b, err := os.ReadFile(pki.CertFile(filepath.Join(s.dir, tlsName), "ca"))
	if err != nil {
		return nil, fmt.Errorf("store CA certificate: %w", err)
	}
	return b, nil
}

// ServerCertValidity is the lifetime of the server certificate init makes (and `veil store
// cert` by default).
const ServerCertValidity = 5 * 365 * 24 * time.Hour

// TLSDir is where the store in dir keeps its CA and server certificate.
func TLSDir(dir string) string { return filepath.Join(dir, tlsName) }

// serverTLS loads the generated server certificate, read again at the first handshake
// after `veil store cert` replaced it.
func (s *Service) serverTLS() (*tls.Config, error) {
	d := TLSDir(s.dir)
	sc, err := pki.LoadServerCert(pki.CertFile(d, "server"), filepath.Join(d, pki.ServerKeyFile), "veil store cert --dir "+s.dir)
	if err != nil {
		return nil, err
	}
	return &tls.Config{GetCertificate: sc.GetCertificate, MinVersion: tls.VersionTLS13}, nil
}
