package storeserver

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// getText GETs url+path without a credential and returns the status and body.
func getText(t *testing.T, client *http.Client, url, path string) (int, string) {
	t.Helper()
	resp, err := client.Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /healthz stays liveness while /readyz says which part a node cannot reach, so a load
// balancer can take it out (session 16's walkthrough: /healthz said ok while PostgreSQL
// was down and every request was 503). The blob store (versitygw killed) is named once
// the breaker's probe notices; the metadata database (PostgreSQL stopped) at the next
// check; /healthz answers ok throughout.
func TestReadyzNamesWhatIsUnreachable(t *testing.T) {
	pg := testutil.StartPostgres(t)
	srv := testutil.StartS3(t)
	s := newServiceOn(t, pg.URL, Config{Blobs: srv.NewBucket(t, "blobs", ""), ProbeInterval: 200 * time.Millisecond, ProbeTimeout: time.Second})
	_, cred := addUser(t, s, "alice")
	url := serve(t, s)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)}}
	defer client.CloseIdleConnections()
	if code, body := getText(t, client, url, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("/readyz with everything up: %d %q", code, body)
	}
	srv.Proc.Kill()
	waitReady := func(want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			code, body := getText(t, client, url, "/readyz")
			if code == http.StatusServiceUnavailable && body == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %q, want 503 %q", code, body, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady("unreachable: blob store\n")
	pg.Stop()
	waitReady("unreachable: metadata database, blob store\n")
	if code, body := getText(t, client, url, "/healthz"); code != http.StatusOK || !strings.HasPrefix(body, "ok") {
		t.Fatalf("/healthz (liveness) with both down: %d %q", code, body)
	}
	if code, _ := getText(t, client, url, "/readyz?x=1"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with a query: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/readyz", nil)
	if resp, err := client.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /readyz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

// A node whose database connections are all in use (busy, not cut off) stays ready: the
// ping that waited for a connection until the probe timeout is not an unreachable
// database.
func TestReadyzBusyPoolIsReady(t *testing.T) {
	s := newPGService(t, Config{ProbeTimeout: 300 * time.Millisecond})
	pool := s.meta.(*pgMeta).pool
	for range pool.Stat().MaxConns() {
		c, err := pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release()
	}
	if down := s.unreachable(t.Context()); len(down) != 0 {
		t.Fatalf("a node with every connection busy is not ready: %v", down)
	}
}
