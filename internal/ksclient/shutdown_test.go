package ksclient_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
)

// waitInFlight waits until the server refuses a query of client name because another of
// its queries is in flight (delay modes), probing with a raw request that the refusal
// leaves uncharged.
func (k *ks) waitInFlight(name string) {
	k.t.Helper()
	p := k.ids[name]
	req := request(k.t, p)
	tr := &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{p.Cert}, RootCAs: p.CAs, ServerName: "127.0.0.1"}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := hc.Post("https://"+k.srv.Addr()+"/v1/evaluate", "application/octet-stream", bytes.NewReader(req))
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Veil-Reason") == "in_flight" {
			return
		}
	}
	k.t.Fatalf("no query of %s in flight at the server after 30s", name)
}

// Graceful stop: a query in flight when the server is told to stop is still answered,
// and Serve returns only after it.
func TestGracefulStopDrainsInFlight(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeFixed, Delay: 2 * time.Second}})
	c := k.client(k.cred("alice"), "https", ksclient.Options{Retries: 1, Timeout: 5 * time.Second})
	if _, err := c.DeriveKeys(context.Background(), digestsN(1, "warm")); err != nil { // opens the connection
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	sent := time.Now() // the server cannot answer before sent + t_D
	go func() {
		_, err := c.DeriveKeys(context.Background(), digestsN(1, "drain"))
		errc <- err
	}()
	k.waitInFlight("alice") // the query is at the server, waiting its t_D
	k.stop()
	if d := time.Since(sent); d < 2*time.Second {
		t.Fatalf("Serve returned %v after the query was sent, before its t_D of 2s was over", d)
	}
	if err := <-errc; err != nil {
		t.Fatalf("in-flight query during shutdown: %v", err)
	}
	// After stopping nothing answers.
	c2 := k.client(k.cred("bob"), "https", ksclient.Options{Timeout: 200 * time.Millisecond})
	if _, err := c2.DeriveKeys(context.Background(), digestsN(1, "x")); !errors.Is(err, ksclient.ErrKSUnavailable) {
		t.Fatalf("after stop: %v", err)
	}
}
