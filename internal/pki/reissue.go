package pki

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/atomicfile"
)

// ReissueOptions say how to re-issue a server's certificate.
type ReissueOptions struct {
	Hosts     []string      // DNS names and IP addresses to add
	OnlyHosts bool          // name Hosts only, dropping the current certificate's names
	Validity  time.Duration // from now; cut to the CA's own end
	Now       time.Time     // zero: time.Now (tests)
}

// Reissued says what ReissueServer wrote.
type Reissued struct {
	Path     string            // the certificate file replaced
	Cert     *x509.Certificate // the new certificate
	Added    []string          // hosts the old certificate did not name
	Dropped  []string          // hosts it named that the new one does not (OnlyHosts)
	CutToCA  bool              // the validity asked for outlived the CA: it ends with the CA
	CAExpiry time.Time
}

// ReissueServer replaces the server certificate in dir (server.crt, or server.pem in an
// old store directory) with a new one signed by the CA in dir (ca.crt, ca.key), for the
// same key (server.key is not touched) and subject, naming the old certificate's hosts
// and o.Hosts. The certificate is written atomically: a crash leaves the old pair or the
// new one, and both work, as the key is the same. Clients trusting the CA (every veil
// credential carries ca.crt; none pins the server's certificate) accept the new one
// unchanged; a running server serving through ServerCert picks it up at its next handshake.
func ReissueServer(dir string, o ReissueOptions) (*Reissued, error) {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.Validity <= 0 {
		return nil, fmt.Errorf("validity %v: want a positive duration", o.Validity)
	}
	for _, h := range o.Hosts {
		if err := CheckHost(h); err != nil {
			return nil, err
		}
	}
	ca, err := loadDirCA(dir, now)
	if err != nil {
		return nil, err
	}
	certPath, keyPath := CertFile(dir, "server"), filepath.Join(dir, ServerKeyFile)
	if err := atomicfile.CheckReplaceable(certPath); err != nil {
		return nil, err
	}
	old, key, err := loadServerPair(certPath, keyPath, ca)
	if err != nil {
		return nil, err
	}
	had := certHosts(old)
	hosts := slices.Clone(had)
	if o.OnlyHosts {
		hosts = nil
	}
	r := &Reissued{Path: certPath, CAExpiry: ca.Cert.NotAfter}
	for _, h := range o.Hosts {
		h = canonHost(h)
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
		if !slices.Contains(had, h) && !slices.Contains(r.Added, h) {
			r.Added = append(r.Added, h)
		}
	}
	for _, h := range had {
		if !slices.Contains(hosts, h) {
			r.Dropped = append(r.Dropped, h)
		}
	}
	if len(hosts) == 0 {
		return nil, errors.New("no hosts for the certificate: give --host")
	}
	notAfter := now.Add(o.Validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter, r.CutToCA = ca.Cert.NotAfter, true
	}
	iss, err := signKey(serverTemplate(old.Subject.CommonName, hosts), ca, key, now, notAfter)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(iss.CertPEM)
	if r.Cert, err = x509.ParseCertificate(b.Bytes); err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	for _, h := range hosts { // what every client will check, before anything is replaced
		if _, err := r.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: h, CurrentTime: now}); err != nil {
			return nil, fmt.Errorf("the new certificate does not verify for %s: %w", h, err)
		}
	}
	if err := atomicfile.Write(certPath, iss.CertPEM, 0o644, true); err != nil {
		return nil, err
	}
	return r, nil
}

// loadDirCA loads the CA of a server directory, saying in one line what is missing.
func loadDirCA(dir string, now time.Time) (*CA, error) {
	certPath, keyPath := CertFile(dir, "ca"), filepath.Join(dir, CAKeyFile)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s is missing: the new certificate is signed by the CA init wrote there (run this on the directory init made, or a full copy of it)", p)
		}
	}
	ca, err := LoadCA(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("CA in %s: %w", dir, err)
	}
	if now.After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("CA certificate %s expired on %s: a certificate it signs is refused too; a new CA means new credentials for every client (docs/deploy.md, Certificates)",
			certPath, ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	return ca, nil
}

// loadServerPair reads the current server certificate (it must be the CA's) and its key.
func loadServerPair(certPath, keyPath string, ca *CA) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("server certificate: %w", err)
	}
	blk, _ := pem.Decode(cb)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("%s: not a PEM certificate", certPath)
	}
	old, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	if err := old.CheckSignatureFrom(ca.Cert); err != nil {
		return nil, nil, fmt.Errorf("%s was not issued by this directory's CA: refusing to replace it", certPath)
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("server key: %w", err)
	}
	key, err := parseKey(kb)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	if !key.PublicKey.Equal(old.PublicKey) {
		return nil, nil, fmt.Errorf("%s does not belong to %s", keyPath, certPath)
	}
	return old, key, nil
}

// certHosts is the names a server certificate is valid for, IP addresses in their
// canonical form, each once (init could name one twice: 127.0.0.1 by default and by --url).
func certHosts(c *x509.Certificate) []string {
	var hosts []string
	for _, n := range c.DNSNames {
		hosts = append(hosts, strings.ToLower(n))
	}
	for _, ip := range c.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	var once []string
	for _, h := range hosts {
		if !slices.Contains(once, h) {
			once = append(once, h)
		}
	}
	return once
}

func canonHost(h string) string {
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return strings.ToLower(h)
}

// CheckHost refuses what cannot be a certificate's host: a URL, a host:port, a name with
// spaces (a client names a host as it dials it, without scheme or port).
func CheckHost(h string) error {
	if net.ParseIP(h) != nil {
		return nil
	}
	if h == "" || len(h) > 253 || strings.HasPrefix(h, ".") || strings.HasSuffix(h, ".") || strings.Contains(h, "..") {
		return fmt.Errorf("host %q: not a DNS name or IP address", h)
	}
	for i, c := range h {
		ok := c == '-' || c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(c == '*' && i == 0 && strings.HasPrefix(h, "*."))
		if !ok {
			return fmt.Errorf("host %q: not a DNS name or IP address (no scheme, port or path: e.g. store.example.org or 10.0.0.5)", h)
		}
	}
	return nil
}
