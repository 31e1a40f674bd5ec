package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
)

// The file names of a CA and a server certificate in a server's directory.
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
)

// SerialBits is the size of certificate serial numbers (random, below 2^SerialBits).
const SerialBits = 127

// Issued is a new certificate with its private key, both PEM-encoded.
type Issued struct {
	CertPEM, KeyPEM []byte
	Serial          *big.Int
}

// CA is a loaded certificate authority that can issue certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	PEM  []byte // the CA certificate as stored
}

// NewCA creates a self-signed certificate authority called commonName.
func NewCA(commonName string, validity time.Duration) (*Issued, error) {
	return sign(&x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil, validity)
}

// IssueServer signs a server certificate (serverAuth) for hosts: IP addresses and DNS names.
// Empty entries are skipped.
func (c *CA) IssueServer(commonName string, hosts []string, validity time.Duration) (*Issued, error) {
	return sign(serverTemplate(commonName, hosts), c, validity)
}

// serverTemplate is a server certificate (serverAuth) for hosts: IP addresses and DNS
// names, empty entries skipped.
func serverTemplate(commonName string, hosts []string) *x509.Certificate {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		// A host named twice (init's default 127.0.0.1 and a --url on it) is named once.
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(tmpl.IPAddresses, ip.Equal) {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" && !slices.ContainsFunc(tmpl.DNSNames, func(n string) bool { return strings.EqualFold(n, h) }) {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return tmpl
}

// IssueClient signs a client certificate (clientAuth) for the client called name.
func (c *CA) IssueClient(name string, validity time.Duration) (*Issued, error) {
	return sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, c, validity)
}

// sign gives tmpl a fresh P-256 key, serial and validity window (from an hour ago, to
// tolerate clock skew) and signs it with parent (self-signed when parent is nil).
func sign(tmpl *x509.Certificate, parent *CA, validity time.Duration) (*Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return signKey(tmpl, parent, key, now, now.Add(validity))
}

// signKey is sign for a given key, valid from an hour before now until notAfter.
func signKey(tmpl *x509.Certificate, parent *CA, key *ecdsa.PrivateKey, now, notAfter time.Time) (*Issued, error) {
	var err error
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), SerialBits)); err != nil {
		return nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), notAfter
	parentCert, parentKey := tmpl, key
	if parent != nil {
		parentCert, parentKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Serial:  tmpl.SerialNumber,
	}, nil
}

// WritePair writes a certificate (0644) and its private key (0600) into dir, each
// atomically (temp file, fsync, rename), the key first.
func WritePair(dir, certFile, keyFile string, iss *Issued) error {
	if err := atomicfile.Write(filepath.Join(dir, keyFile), iss.KeyPEM, 0o600, true); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, certFile), iss.CertPEM, 0o644, true)
}

// LoadCA reads a CA certificate and its ECDSA key (PKCS#8 or SEC 1).
func LoadCA(certPath, keyPath string) (*CA, error) {
	cp, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	kp, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	cb, _ := pem.Decode(cp)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: not a PEM certificate", filepath.Base(certPath))
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(certPath), err)
	}
	key, err := parseKey(kp)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(keyPath), err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("%s does not belong to %s", filepath.Base(keyPath), filepath.Base(certPath))
	}
	return &CA{Cert: cert, Key: key, PEM: cp}, nil
}

func parseKey(b []byte) (*ecdsa.PrivateKey, error) {
	kb, _ := pem.Decode(b)
	if kb == nil {
		return nil, errors.New("not a PEM private key")
	}
	switch kb.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
		if err != nil {
			return nil, err
		}
		if ek, ok := k.(*ecdsa.PrivateKey); ok {
			return ek, nil
		}
		return nil, fmt.Errorf("key is %T, not ECDSA", k)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(kb.Bytes)
	}
	return nil, fmt.Errorf("PEM block %q is not a private key", kb.Type)
}

// CertFile is dir/stem.crt, or dir/stem.pem when only that exists (store directories made
// before the file names were unified).
func CertFile(dir, stem string) string {
	p := filepath.Join(dir, stem+".crt")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, stem+".pem")); err == nil {
			return filepath.Join(dir, stem+".pem")
		}
	}
	return p
}

// InitDir creates a server's certificates in dir, under the standard file names: a new CA
// (ca.crt, ca.key) and a server certificate it signs for hosts (server.crt, server.key). It
// returns the CA (to sign client certificates next) and the server certificate.
func InitDir(dir, caName, serverName string, hosts []string, caValidity, serverValidity time.Duration) (*CA, *Issued, error) {
	caIss, err := NewCA(caName, caValidity)
	if err != nil {
		return nil, nil, err
	}
	if err := WritePair(dir, CACertFile, CAKeyFile, caIss); err != nil {
		return nil, nil, err
	}
	ca, err := LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, err
	}
	srv, err := ca.IssueServer(serverName, hosts, serverValidity)
	if err != nil {
		return nil, nil, err
	}
	if err := WritePair(dir, ServerCertFile, ServerKeyFile, srv); err != nil {
		return nil, nil, err
	}
	return ca, srv, nil
}
