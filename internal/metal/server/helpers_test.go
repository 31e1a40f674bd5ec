package server

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

func httpClient(t testing.TB, caPEM string) *http.Client { return httpClientFrom(t, caPEM, "") }

// httpClientFrom is httpClient whose connections come from the local address src (another
// client address on loopback, 127.0.0.2 say: the servers count waiting requests per client
// address); "" for any.
func httpClientFrom(t testing.TB, caPEM, src string) *http.Client {
	cfg, err := ClientTLS([]byte(caPEM), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	if src != "" {
		tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext
	}
	return &http.Client{Transport: tr}
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
