package store

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
	"github.com/veil-project/veil/internal/storage"
)

// Init creates a store in dir: the database, the blob and temp folders, a self-signed CA and
// a server certificate for localhost, 127.0.0.1, ::1, this host's name and any extra hosts
// (names or IP addresses), and the admin credential (dir/admin.cred, mode 0600).
func Init(dir string, hosts ...string) error {
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err == nil {
		return fmt.Errorf("init %s: %w: already a store", dir, storage.ErrExists)
	}
	for _, d := range []string{dir, filepath.Join(dir, tmpName), filepath.Join(dir, tlsName)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	for i := range 256 {
		if err := os.MkdirAll(filepath.Join(dir, blobName, fmt.Sprintf("%02x", i)), 0o700); err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	if err := writeTLS(filepath.Join(dir, tlsName), hosts); err != nil {
		return fmt.Errorf("init: tls: %w", err)
	}
	db, err := openDB(filepath.Join(dir, dbFile), true)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	db.Close()
	s, err := Open(dir, Config{})
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

// writeTLS generates a P-256 CA and a server certificate signed by it.
func writeTLS(dir string, hosts []string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "veil store CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "veil store"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(5, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	caKeyDER, _ := x509.MarshalECPrivateKey(caKey)
	keyDER, _ := x509.MarshalECPrivateKey(key)
	files := []struct {
		name, typ string
		der       []byte
	}{
		{"ca.pem", "CERTIFICATE", caDER}, {"ca.key", "EC PRIVATE KEY", caKeyDER},
		{"server.pem", "CERTIFICATE", der}, {"server.key", "EC PRIVATE KEY", keyDER},
	}
	for _, f := range files {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := atomicfile.Write(filepath.Join(dir, f.name), b, 0o600, true); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

// serverTLS loads the generated server certificate.
func (s *Service) serverTLS() (*tls.Config, error) {
	d := filepath.Join(s.dir, tlsName)
	cert, err := tls.LoadX509KeyPair(filepath.Join(d, "server.pem"), filepath.Join(d, "server.key"))
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, nil
}
