package storeserver

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/pki"
	"github.com/veil-project/veil/internal/server"
)

// A node whose server certificate has expired refuses to serve, with one line saying so:
// every client refuses the certificate. Found deploying: the node started and logged
// nothing, while clients skipped it (several nodes) or failed naming another node.
func TestServeRefusesExpiredCertificate(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(dir, tlsName)
	ca, err := pki.LoadCA(filepath.Join(d, pki.CACertFile), filepath.Join(d, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	old, err := ca.IssueServer("veil store", []string{"127.0.0.1"}, -time.Minute) // ended a minute ago
	if err != nil {
		t.Fatal(err)
	}
	if err := pki.WritePair(d, pki.ServerCertFile, pki.ServerKeyFile, old); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = s.Serve(ctx, server.Listeners{HTTP: ln})
	if err == nil || !strings.Contains(err.Error(), "expired on") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("serve with an expired certificate: %v", err)
	}
	t.Log(err)
	s.Close()
	err = Run(ctx, dir, "127.0.0.1:0", Config{}, func(string) { t.Error("Run said it serves") })
	if err == nil || !strings.Contains(err.Error(), "expired on") || !strings.Contains(err.Error(), "re-issue it with 'veil store cert --dir "+dir+"'") {
		t.Fatalf("Run with an expired certificate: %v", err)
	}
	// What the refusal says to do is enough: the same CA, the same key, a new end.
	if _, err := pki.ReissueServer(TLSDir(dir), pki.ReissueOptions{Validity: ServerCertValidity}); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithCancel(ctx)
	err = Run(ctx2, dir, "127.0.0.1:0", Config{}, func(string) { cancel2() })
	if err != nil {
		t.Fatalf("Run after re-issuing: %v", err)
	}
}
