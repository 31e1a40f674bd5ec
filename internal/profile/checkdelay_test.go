package profile

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/testutil"
)

// TestCheckWarnsOfDelay: init's credential check against a key server in a delay mode that
// holds another query of the client past init's --ks-timeout warns in one line that the key
// server delayed its answer past the timeout, with the numbers; it said "is rate-limiting
// it now (key server rate limit reached (a query of this client is already in flight))".
// A spent budget reads as one phrase too (cmd/veil's TestE2EInitChecksKeyServerCredential).
func TestCheckWarnsOfDelay(t *testing.T) {
	dir, addr := t.TempDir(), testutil.Addr(testutil.FreePort(t))
	if err := keyserver.Init(dir, keyserver.InitOptions{URL: "https://" + addr, UDP: "-"}); err != nil {
		t.Fatal(err)
	}
	raw, err := keyserver.AddClient(dir, "alice", keyserver.AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := keyserver.Config{HTTPSAddr: addr, UDPAddr: "-", RateLimit: keyserver.RateLimit{Mode: keyserver.ModeFixed, Delay: 2 * time.Second}}
	srv, err := keyserver.Open(context.Background(), dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := keyserver.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ls) }()
	defer func() { cancel(); <-served; srv.Close() }()
	cred, err := ksclient.ParseCredential(raw)
	if err != nil {
		t.Fatal(err)
	}
	patient, err := ksclient.New(cred, ksclient.Options{Timeout: 10 * time.Second, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer patient.Close()
	held := make(chan error, 1)
	go func() { held <- patient.Check(context.Background()) }()
	// The first query takes its 2 s delay; wait until the key server holds it.
	pem, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	defer hc.CloseIdleConnections()
	testutil.WaitFor(t, 10*time.Second, "alice's query held in its delay", func() bool {
		resp, err := hc.Get("https://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\nveil_ks_queries_in_flight 1\n")
	})
	var warned []string
	err = checkKS(context.Background(), cred, &Config{KSTransport: "https", KSTimeout: "150ms"}, nil, func(err error) { warned = append(warned, err.Error()) })
	want := "key server https://" + addr + " accepted the credential but delayed its answer past this client's timeout " +
		"(150ms per attempt, 3 attempts: a delay-mode rate limit): puts store without deduplication until it answers in time"
	if err != nil || len(warned) != 1 || warned[0] != want {
		t.Fatalf("check against a delaying key server: %v, warned %q; want %q", err, warned, want)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
