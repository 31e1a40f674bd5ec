package pki

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newTestCA(t *testing.T, dir string) *CA {
	t.Helper()
	iss, err := NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePair(dir, CACertFile, CAKeyFile, iss); err != nil {
		t.Fatal(err)
	}
	ca, err := LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func TestIssueAndVerify(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	if !ca.Cert.IsCA || ca.Cert.SerialNumber.BitLen() > SerialBits {
		t.Fatalf("CA: IsCA %v, serial of %d bits", ca.Cert.IsCA, ca.Cert.SerialNumber.BitLen())
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	srv, err := ca.IssueServer("srv", []string{"127.0.0.1", "", "example.test", "::1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePair(dir, ServerCertFile, ServerKeyFile, srv); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	for _, h := range []string{"127.0.0.1", "::1", "example.test"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: h}); err != nil {
			t.Errorf("server certificate for %s: %v", h, err)
		}
	}
	if len(leaf.DNSNames) != 1 || len(leaf.IPAddresses) != 2 {
		t.Fatalf("SANs %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	cl, err := ca.IssueClient("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(cl.CertPEM)
	cc, _ := x509.ParseCertificate(b.Bytes)
	if _, err := cc.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("client certificate: %v", err)
	}
	if cc.Subject.CommonName != "alice" || cc.SerialNumber.Cmp(cl.Serial) != 0 {
		t.Fatalf("client certificate: %s %s", cc.Subject.CommonName, cc.SerialNumber)
	}
	for name, want := range map[string]os.FileMode{CACertFile: 0o644, CAKeyFile: 0o600, ServerKeyFile: 0o600} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v (%v)", name, fi.Mode().Perm(), want, err)
		}
	}
}

// A CA key in SEC 1 form (older store directories) still loads.
func TestLoadSEC1Key(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	der, err := x509.MarshalECPrivateKey(ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "sec1.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
	got, err := LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, "sec1.key"))
	if err != nil || !got.Key.Equal(ca.Key) {
		t.Fatalf("SEC 1 key: %v", err)
	}
}

func TestLoadRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	newTestCA(t, dir)
	other := t.TempDir()
	newTestCA(t, other)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o600)
		return p
	}
	cert, key := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	cases := map[string][2]string{
		"missing cert":   {filepath.Join(dir, "none"), key},
		"garbage cert":   {write("g.crt", "nonsense"), key},
		"garbage key":    {cert, write("g.key", "nonsense")},
		"cert as key":    {cert, cert},
		"other CA's key": {cert, filepath.Join(other, CAKeyFile)},
	}
	for name, c := range cases {
		if _, err := LoadCA(c[0], c[1]); err == nil {
			t.Errorf("%s: loaded", name)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error is not one line: %q", name, err)
		}
	}
}

func TestCertFileFindsLegacyName(t *testing.T) {
	dir := t.TempDir()
	if got := CertFile(dir, "ca"); got != filepath.Join(dir, "ca.crt") {
		t.Fatalf("empty dir: %s", got)
	}
	os.WriteFile(filepath.Join(dir, "ca.pem"), nil, 0o600)
	if got := CertFile(dir, "ca"); got != filepath.Join(dir, "ca.pem") {
		t.Fatalf("legacy only: %s", got)
	}
	os.WriteFile(filepath.Join(dir, "ca.crt"), nil, 0o600)
	if got := CertFile(dir, "ca"); got != filepath.Join(dir, "ca.crt") {
		t.Fatalf("both: %s", got)
	}
}

func TestInitDir(t *testing.T) {
	dir := t.TempDir()
	ca, srv, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1", "example.org"}, time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CACertFile, CAKeyFile, ServerCertFile, ServerKeyFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	pair, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "example.org"}); err != nil {
		t.Fatalf("server certificate does not chain to the CA: %v", err)
	}
}
