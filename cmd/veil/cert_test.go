package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mserver "github.com/veil-project/veil/internal/metal/server"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/pki"
)

// Peekaboo's two servers and Metal's refuse to start with an expired certificate (they
// started silently and answered no one), naming their `cert` command; that command
// renews it from the same CA and they start.
func TestPeekabooMetalCertCommands(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	kdir, vdir, mdir := filepath.Join(root, "k"), filepath.Join(root, "v"), filepath.Join(root, "m")
	if err := kserver.Init(kdir, kserver.InitOptions{Endpoint: "https://127.0.0.1:1", PIR: pir.Params{Bits: 4, Slots: 2}}); err != nil {
		t.Fatal(err)
	}
	if out, err := veil(t, ctx, "peekaboo", "vserver", "init", "--dir", vdir, "--relay-cred", filepath.Join(kdir, kserver.FileRelayCred),
		"--endpoint", "https://127.0.0.1:2"); err != nil {
		t.Fatalf("vserver init: %v %s", err, out)
	}
	if out, err := veil(t, ctx, "metal", "server", "init", "--role", "2", "--dir", mdir, "--endpoint", "https://127.0.0.1:3",
		"--files-log2", "4", "--block-size", "64"); err != nil {
		t.Fatalf("metal init: %v %s", err, out)
	}
	open := map[string]func(string) (io.Closer, error){
		"peekaboo kserver": func(d string) (io.Closer, error) { return kserver.Open(d, kserver.Config{}) },
		"peekaboo vserver": func(d string) (io.Closer, error) { return vserver.Open(d, vserver.Config{}) },
		"metal server":     func(d string) (io.Closer, error) { return mserver.Open(d, mserver.Config{}) },
	}
	dirs := map[string]string{"peekaboo kserver": kdir, "peekaboo vserver": vdir, "metal server": mdir}
	for kind, dir := range dirs {
		ca, err := pki.LoadCA(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
		if err != nil {
			t.Fatal(err)
		}
		old, err := ca.IssueServer(kind, []string{"127.0.0.1", "localhost"}, -time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := pki.WritePair(dir, pki.ServerCertFile, pki.ServerKeyFile, old); err != nil {
			t.Fatal(err)
		}
		renew := "veil " + kind + " cert --dir " + dir
		if s, err := open[kind](dir); err == nil {
			s.Close()
			t.Fatalf("%s opened with an expired certificate", kind)
		} else if !strings.Contains(err.Error(), "expired on") || !strings.Contains(err.Error(), "'"+renew+"'") {
			t.Fatalf("%s refusal: %v", kind, err)
		}
		out, err := veil(t, ctx, append(strings.Fields(kind), "cert", "--dir", dir, "--host", kind[:1]+".example")...)
		if err != nil || !strings.Contains(out, "localhost, "+kind[:1]+".example, 127.0.0.1") || !strings.Contains(out, "valid until "+time.Now().Add(10*365*24*time.Hour).UTC().Format(time.DateOnly)) {
			t.Fatalf("%s cert: %v\n%s", kind, err, out)
		}
		s, err := open[kind](dir)
		if err != nil {
			t.Fatalf("%s after cert: %v", kind, err)
		}
		s.Close()
	}
}
