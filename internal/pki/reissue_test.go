package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveTLS answers TLS handshakes on addr with sc's certificate until the test ends.
func serveTLS(t *testing.T, addr string, sc *ServerCert) string {
	t.Helper()
	ln, err := tls.Listen("tcp", addr, &tls.Config{GetCertificate: sc.GetCertificate, MinVersion: tls.VersionTLS13})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects to addr as a veil client does: trusting roots only, checking serverName
// (the address's host when empty).
func dial(addr, serverName string, roots *x509.CertPool) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS13})
	if err == nil {
		c.Close()
	}
	return err
}

// A certificate re-issued with an added name and address is served by a running server at
// once, and a client that trusts the CA as it was before (its credential's ca.crt)
// connects by the new name and the new address; the old names stay, the key is the same.
func TestReissueServesNewHosts(t *testing.T) {
	dir := t.TempDir()
	ca, _, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1", "old.example"}, 24*time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM) // the clients' copy, never updated
	keyBefore, _ := os.ReadFile(filepath.Join(dir, ServerKeyFile))
	sc, err := LoadServerCert(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), "")
	if err != nil {
		t.Fatal(err)
	}
	onOne := serveTLS(t, "127.0.0.1:0", sc)
	onTwo := serveTLS(t, "127.0.0.2:0", sc) // Linux answers on all of 127/8
	if err := dial(onOne, "", roots); err != nil {
		t.Fatalf("before: by 127.0.0.1: %v", err)
	}
	if err := dial(onOne, "new.example", roots); err == nil {
		t.Fatal("before: new.example accepted")
	}
	if err := dial(onTwo, "", roots); err == nil {
		t.Fatal("before: 127.0.0.2 accepted")
	}

	r, err := ReissueServer(dir, ReissueOptions{Hosts: []string{"new.example", "127.0.0.2", "OLD.example"}, Validity: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Added, []string{"new.example", "127.0.0.2"}) || r.Dropped != nil || r.CutToCA {
		t.Fatalf("added %v, dropped %v, cut %v", r.Added, r.Dropped, r.CutToCA)
	}
	for _, c := range []struct{ addr, name string }{{onOne, "new.example"}, {onTwo, ""}, {onOne, ""}, {onOne, "old.example"}} {
		if err := dial(c.addr, c.name, roots); err != nil {
			t.Errorf("after: %s as %q: %v", c.addr, c.name, err)
		}
	}
	if got := certHosts(r.Cert); !slices.Equal(got, []string{"old.example", "new.example", "127.0.0.1", "127.0.0.2"}) {
		t.Errorf("hosts %v", got)
	}
	if r.Cert.Subject.CommonName != "test server" || time.Until(r.Cert.NotAfter) < time.Hour+50*time.Minute {
		t.Errorf("subject %q, ends %v", r.Cert.Subject.CommonName, r.Cert.NotAfter)
	}
	keyAfter, _ := os.ReadFile(filepath.Join(dir, ServerKeyFile))
	if !bytes.Equal(keyBefore, keyAfter) {
		t.Error("server.key changed: a crash between the two files would have left half a pair")
	}
	if fi, err := os.Stat(filepath.Join(dir, ServerCertFile)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("server.crt: %v %v", fi.Mode(), err)
	}
	// The server re-reads only a pair that loads: garbage in server.crt leaves the
	// re-issued certificate in service.
	os.WriteFile(filepath.Join(dir, ServerCertFile), []byte("garbage"), 0o644)
	if err := dial(onOne, "new.example", roots); err != nil {
		t.Errorf("after garbage: %v", err)
	}
}

// What ReissueServer refuses, each in one line, leaving server.crt as it was.
func TestReissueRefuses(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name  string
		setup func(dir string)
		o     ReissueOptions
		want  string
	}{
		{"missing CA key", func(dir string) { os.Remove(filepath.Join(dir, CAKeyFile)) }, ReissueOptions{}, "ca.key is missing"},
		{"missing CA certificate", func(dir string) { os.Remove(filepath.Join(dir, CACertFile)) }, ReissueOptions{}, "ca.crt is missing"},
		{"URL as host", nil, ReissueOptions{Hosts: []string{"https://new.example:7480"}}, `host "https://new.example:7480": not a DNS name`},
		{"host:port", nil, ReissueOptions{Hosts: []string{"new.example:7480"}}, "not a DNS name or IP address"},
		{"no validity", nil, ReissueOptions{Validity: -1}, "want a positive duration"},
		{"expired CA", nil, ReissueOptions{Now: now.Add(48 * time.Hour)}, "ca.crt expired on"},
		{"no hosts left", nil, ReissueOptions{OnlyHosts: true}, "no hosts for the certificate: give --host"},
		{"another CA's certificate", func(dir string) {
			other := t.TempDir()
			InitDir(other, "other CA", "other", []string{"x.example"}, time.Hour, time.Hour)
			for _, f := range []string{ServerCertFile, ServerKeyFile} {
				b, _ := os.ReadFile(filepath.Join(other, f))
				os.WriteFile(filepath.Join(dir, f), b, 0o600)
			}
		}, ReissueOptions{}, "was not issued by this directory's CA"},
		{"key of another certificate", func(dir string) {
			ca, _ := LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
			iss, _ := ca.IssueServer("x", []string{"x.example"}, time.Hour)
			os.WriteFile(filepath.Join(dir, ServerKeyFile), iss.KeyPEM, 0o600)
		}, ReissueOptions{}, "server.key does not belong to"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, _, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1"}, 24*time.Hour, time.Hour); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(dir)
			}
			before, _ := os.ReadFile(filepath.Join(dir, ServerCertFile))
			if c.o.Validity == 0 {
				c.o.Validity = time.Hour
			}
			_, err := ReissueServer(dir, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("got %v, want one line with %q", err, c.want)
			}
			t.Log(err)
			if after, _ := os.ReadFile(filepath.Join(dir, ServerCertFile)); !bytes.Equal(before, after) {
				t.Fatal("server.crt changed")
			}
		})
	}
}

// --only-hosts drops the names not given again; a validity past the CA's end is cut to it.
func TestReissueOnlyHostsAndCutToCA(t *testing.T) {
	dir := t.TempDir()
	ca, _, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1", "old.example"}, 24*time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ReissueServer(dir, ReissueOptions{Hosts: []string{"new.example"}, OnlyHosts: true, Validity: 1000 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := certHosts(r.Cert); !slices.Equal(got, []string{"new.example"}) || !slices.Equal(r.Dropped, []string{"old.example", "127.0.0.1"}) {
		t.Fatalf("hosts %v, dropped %v", got, r.Dropped)
	}
	if !r.CutToCA || !r.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Fatalf("cut %v: ends %v, CA %v", r.CutToCA, r.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

// An expired server certificate is refused at start, naming the command that re-issues it.
func TestLoadServerCertRefusesExpired(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	old, err := ca.IssueServer("srv", []string{"127.0.0.1"}, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePair(dir, ServerCertFile, ServerKeyFile, old); err != nil {
		t.Fatal(err)
	}
	_, err = LoadServerCert(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), "veil x cert --dir D")
	if err == nil || !strings.Contains(err.Error(), "expired on") || !strings.Contains(err.Error(), "re-issue it with 'veil x cert --dir D'") {
		t.Fatalf("expired: %v", err)
	}
	if _, err := ReissueServer(dir, ReissueOptions{Validity: 30 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadServerCert(filepath.Join(dir, ServerCertFile), filepath.Join(dir, ServerKeyFile), ""); err != nil {
		t.Fatalf("after re-issuing: %v", err)
	}
}

// An old store directory names its certificates ca.pem and server.pem: the CA is found
// there and server.pem is what is replaced (no server.crt appears beside it).
func TestReissueLegacyNames(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1"}, 24*time.Hour, time.Hour); err != nil {
		t.Fatal(err)
	}
	os.Rename(filepath.Join(dir, CACertFile), filepath.Join(dir, "ca.pem"))
	os.Rename(filepath.Join(dir, ServerCertFile), filepath.Join(dir, "server.pem"))
	r, err := ReissueServer(dir, ReissueOptions{Hosts: []string{"new.example"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r.Path != filepath.Join(dir, "server.pem") {
		t.Fatalf("replaced %s", r.Path)
	}
	if _, err := os.Stat(filepath.Join(dir, ServerCertFile)); !os.IsNotExist(err) {
		t.Fatalf("server.crt: %v", err)
	}
	if _, err := LoadServerCert(r.Path, filepath.Join(dir, ServerKeyFile), ""); err != nil {
		t.Fatal(err)
	}
}

// A host given twice (init's default 127.0.0.1 and the --url on it, as 'veil serve' and
// 'keyserver init' did) is named once in the certificate, and a certificate that names one
// twice is re-issued naming it once ('veil store cert' printed "127.0.0.1, ::1, 127.0.0.1";
// found by a user walkthrough).
func TestServerCertNamesEachHostOnce(t *testing.T) {
	dir := t.TempDir()
	_, srv, err := InitDir(dir, "test CA", "test server", []string{"127.0.0.1", "Store.example", "::1", "127.0.0.1", "store.example"}, 24*time.Hour, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(srv.CertPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if got := certHostsRaw(c); !slices.Equal(got, []string{"Store.example", "127.0.0.1", "::1"}) {
		t.Fatalf("init's certificate names %q", got)
	}
	// A certificate of before, naming 127.0.0.1 twice.
	ca, err := LoadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	key, err := parseKey(mustRead(t, filepath.Join(dir, ServerKeyFile)))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := serverTemplate("test server", []string{"a.example"})
	tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP("127.0.0.1"), net.ParseIP("127.0.0.1"))
	iss, err := signKey(tmpl, ca, key, time.Now(), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ServerCertFile), iss.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ReissueServer(dir, ReissueOptions{Hosts: []string{"127.0.0.2"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got := certHostsRaw(r.Cert); !slices.Equal(got, []string{"a.example", "127.0.0.1", "127.0.0.2"}) {
		t.Fatalf("re-issued certificate names %q", got)
	}
}

// certHostsRaw is every name and address a certificate holds, as it holds them.
func certHostsRaw(c *x509.Certificate) []string {
	hosts := slices.Clone(c.DNSNames)
	for _, ip := range c.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
