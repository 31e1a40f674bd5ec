// Package pki makes the Peekaboo servers' private certificate authorities and the
// certificates they issue (ECDSA P-256, TLS 1.3 only), and builds tls.Configs from PEM.
// It is a stand-in until veil has one shared PKI package; it imports no veil package.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"time"
)

// Validity of everything issued here.
const Validity = 10 * 365 * 24 * time.Hour

// Pair is a PEM certificate and its PEM private key.
type Pair struct{ Cert, Key []byte }

// CA is a certificate authority that can issue leaves.
type CA struct {
	Pair
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name.
func NewCA(name string) (*CA, error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	p, cert, key, err := sign(tmpl, nil, nil)
	if err != nil {
		return nil, err
	}
	return &CA{Pair: p, cert: cert, key: key}, nil
}

// LoadCA parses a CA from PEM.
func LoadCA(p Pair) (*CA, error) {
	c, err := tls.X509KeyPair(p.Cert, p.Key)
	if err != nil {
		return nil, err
	}
	key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("CA key is not ECDSA")
	}
	cert, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil, err
	}
	return &CA{Pair: p, cert: cert, key: key}, nil
}

// Server issues a server certificate for hosts (names or IP addresses).
func (ca *CA) Server(name string, hosts []string) (Pair, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	p, _, _, err := sign(tmpl, ca.cert, ca.key)
	return p, err
}

// Client issues a client certificate named name.
func (ca *CA) Client(name string) (Pair, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	p, _, _, err := sign(tmpl, ca.cert, ca.key)
	return p, err
}

func sign(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (Pair, *x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, nil, nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return Pair{}, nil, nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(Validity)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return Pair{}, nil, nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return Pair{}, nil, nil, err
	}
	return Pair{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})}, cert, key, nil
}

func pool(caPEM []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("CA certificate is not PEM")
	}
	return p, nil
}

// ServerConfig is TLS 1.3 with cert; when clientCA is set, client certificates from it are
// verified if given (handlers requiring one check r.TLS.VerifiedChains).
func ServerConfig(cert Pair, clientCA []byte) (*tls.Config, error) {
	c, err := tls.X509KeyPair(cert.Cert, cert.Key)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
	if clientCA != nil {
		if cfg.ClientCAs, err = pool(clientCA); err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, nil
}

// ClientConfig trusts only caPEM and presents cert when given.
func ClientConfig(caPEM []byte, cert *Pair) (*tls.Config, error) {
	p, err := pool(caPEM)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: p, MinVersion: tls.VersionTLS13}
	if cert != nil {
		c, err := tls.X509KeyPair(cert.Cert, cert.Key)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
