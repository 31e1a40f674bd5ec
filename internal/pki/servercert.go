package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"
	"time"
)

// ServerCert is a server's certificate and key, read from their files at start and read
// again at the first handshake after either file changed: a certificate re-issued by
// ReissueServer (the servers' `cert` commands) is served without a restart. Use
// GetCertificate as the server's tls.Config.GetCertificate.
type ServerCert struct {
	certPath, keyPath string

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp os.FileInfo // the files as they were when cert was read
	keyStamp  os.FileInfo
}

// LoadServerCert reads a server's certificate and key, refusing a certificate outside its
// validity window (CheckValid: renew is the command that re-issues it, named in the
// refusal).
func LoadServerCert(certPath, keyPath, renew string) (*ServerCert, error) {
	s := &ServerCert{certPath: certPath, keyPath: keyPath}
	cs, ks, err := s.stamps()
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	c, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
	}
	if err := CheckValid("server certificate "+certPath, renew, c, time.Now()); err != nil {
		return nil, err
	}
	s.cert, s.certStamp, s.keyStamp = &c, cs, ks
	return s, nil
}

func (s *ServerCert) stamps() (cert, key os.FileInfo, err error) {
	if cert, err = os.Stat(s.certPath); err != nil {
		return nil, nil, err
	}
	if key, err = os.Stat(s.keyPath); err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

// GetCertificate returns the certificate, read again first if either file changed since
// it was read (a stat of each per handshake). A pair that does not load (a key and a
// certificate copied by hand one after the other) leaves the one read before in service
// and is tried again at the next handshake.
func (s *ServerCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ks, err := s.stamps()
	if err != nil || (sameFile(cs, s.certStamp) && sameFile(ks, s.keyStamp)) {
		return s.cert, nil
	}
	if c, err := tls.LoadX509KeyPair(s.certPath, s.keyPath); err == nil {
		s.cert, s.certStamp, s.keyStamp = &c, cs, ks
	}
	return s.cert, nil
}

// sameFile reports whether a and b are the same unchanged file: an atomic replacement
// (atomicfile.Write renames a new file over the old) changes the inode.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size()
}

// CheckValid refuses a server's certificate outside its validity window, which every
// client refuses: a server starting with it would answer no one. what names the file;
// renew, when set, is the command that re-issues it, named in the refusal of an expired
// certificate.
func CheckValid(what, renew string, c tls.Certificate, now time.Time) error {
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	switch {
	case now.After(leaf.NotAfter):
		err := fmt.Errorf("%s expired on %s: clients refuse it", what, leaf.NotAfter.UTC().Format(time.DateOnly))
		if renew != "" {
			err = fmt.Errorf("%w; re-issue it with '%s' (clients keep their credentials)", err, renew)
		}
		return err
	case now.Before(leaf.NotBefore):
		return fmt.Errorf("%s is valid from %s only: is this machine's clock right?", what, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}
