package keyserver

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/pki"
)

// A key server whose certificate has expired refuses to start, with one line saying so:
// every client refuses the certificate (found deploying: it started silently).
func TestOpenRefusesExpiredCertificate(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(filepath.Join(dir, fileCACert), filepath.Join(dir, fileCAKey))
	if err != nil {
		t.Fatal(err)
	}
	old, err := ca.IssueServer("veil key server", []string{"127.0.0.1"}, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(dir, fileSrvCert, fileSrvKey, old); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), dir, Config{})
	if err == nil {
		s.Close()
		t.Fatal("opened with an expired certificate")
	}
	if !strings.Contains(err.Error(), "expired on") || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), "re-issue it with 'veil keyserver cert --dir "+dir+"'") {
		t.Fatalf("refusal: %v", err)
	}
	t.Log(err)
	// What the refusal says to do is enough: the same CA, the same key, a new end.
	if _, err := pki.ReissueServer(dir, pki.ReissueOptions{Validity: ServerCertValidity}); err != nil {
		t.Fatal(err)
	}
	s, err = Open(context.Background(), dir, Config{})
	if err != nil {
		t.Fatalf("after re-issuing: %v", err)
	}
	s.Close()
}
