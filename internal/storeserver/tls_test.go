package storeserver

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/pki"
)

// A data directory made before the certificate files were unified (tls/ca.pem,
// tls/server.pem, SEC 1 keys) still serves TLS and still issues credentials.
func TestLegacyTLSFiles(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, tlsName)
	for _, stem := range []string{"ca", "server"} {
		if err := os.Rename(filepath.Join(d, stem+".crt"), filepath.Join(d, stem+".pem")); err != nil {
			t.Fatal(err)
		}
		kp := filepath.Join(d, stem+".key")
		b, _ := os.ReadFile(kp)
		blk, _ := pem.Decode(b)
		k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalECPrivateKey(k.(*ecdsa.PrivateKey))
		os.WriteFile(kp, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, cred := addUser(t, s, "alice")
	if !strings.Contains(cred.CA, "BEGIN CERTIFICATE") {
		t.Fatal("credential without the CA certificate")
	}
	url := serve(t, s)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), tlsFor(t, cred))
	if err != nil {
		t.Fatalf("TLS with legacy files: %v", err)
	}
	conn.Close()
}

// Without its CA certificate, the store refuses to add a user rather than hand out a
// credential that cannot verify the server.
func TestAddUserNeedsCA(t *testing.T) {
	s := newTestService(t, Config{})
	os.Remove(filepath.Join(s.dir, tlsName, pki.CACertFile))
	if _, err := s.AddUser("bob"); err == nil || !strings.Contains(err.Error(), "CA certificate") {
		t.Fatalf("add user without a CA: %v", err)
	}
	if _, err := s.Namespace("bob"); err == nil {
		t.Fatal("the user was created anyway")
	}
}
