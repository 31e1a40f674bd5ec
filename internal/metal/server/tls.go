package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

func certPool(caPEM []byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("CA certificate is not PEM")
	}
	return p, nil
}

// serverTLS is TLS 1.3 with the server's certificate from get (pki.ServerCert's: a
// re-issued one is served without a restart); client certificates from clientCA are
// verified when given (only /v1/peer requires one).
func serverTLS(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCA []byte) (*tls.Config, error) {
	p, err := certPool(clientCA)
	if err != nil {
		return nil, err
	}
	return &tls.Config{GetCertificate: get, MinVersion: tls.VersionTLS13,
		ClientCAs: p, ClientAuth: tls.VerifyClientCertIfGiven, NextProtos: []string{"http/1.1"}}, nil
}

// ClientTLS trusts only caPEM and presents the certificate when given.
func ClientTLS(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	p, err := certPool(caPEM)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{RootCAs: p, MinVersion: tls.VersionTLS13}
	if certPEM != nil {
		c, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return cfg, nil
}
