package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/url"
	"slices"
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
	return ServerConfigFunc(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &c, nil }, clientCA)
}

// ServerConfigFunc is ServerConfig with the certificate get returns at each handshake (the
// servers give pki.ServerCert's, which serves a re-issued certificate without a restart).
func ServerConfigFunc(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCA []byte) (*tls.Config, error) {
	cfg := &tls.Config{GetCertificate: get, MinVersion: tls.VersionTLS13, NextProtos: []string{"h2", "http/1.1"}}
	if clientCA != nil {
		var err error
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

// CertHosts is the names a server certificate must cover: hosts (default 127.0.0.1 and
// localhost) and the host of endpoint, the URL peers reach the server at. Found by a user
// walkthrough, as for the key server: init --endpoint https://k.example:7490 without
// --host k.example made a server no peer could verify ("certificate is valid for
// 127.0.0.1, localhost, not k.example").
func CertHosts(hosts []string, endpoint string) []string {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1", "localhost"}
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Hostname() == "" || slices.Contains(hosts, u.Hostname()) {
		return hosts
	}
	return append(slices.Clone(hosts), u.Hostname())
}
