package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// Pair is a PEM certificate and its PEM private key.
type Pair struct{ Cert, Key []byte }

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
