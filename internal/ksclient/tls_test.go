package ksclient_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
)

// tlsNoClient trusts the KS CA without presenting a client certificate.
func (k *ks) tlsNoClient() *tls.Config {
	pem, err := os.ReadFile(filepath.Join(k.dir, "ca.crt"))
	if err != nil {
		k.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}
