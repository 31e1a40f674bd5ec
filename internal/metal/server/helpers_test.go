package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

func httpClient(t testing.TB, caPEM string) *http.Client {
	cfg, err := ClientTLS([]byte(caPEM), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

func get(t *testing.T, d access.Deployment, i int, url string) string {
	ca := d.CA1
	if i == 1 {
		ca = d.CA2
	}
	hc := httpClient(t, ca)
	defer hc.CloseIdleConnections() // each connection would hold one of the server's --max-conns
	resp, err := hc.Get(url)
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
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
