package server

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

func httpClient(t *testing.T, caPEM string) *http.Client {
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM([]byte(caPEM)) {
		t.Fatal("CA not PEM")
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p}}}
}

func get(t *testing.T, d access.Deployment, i int, url string) string {
	ca := d.CA1
	if i == 1 {
		ca = d.CA2
	}
	resp, err := httpClient(t, ca).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(b)
}

// testWriter sends server logs to the test log (shown on failure or with -v).
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
