package storeserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storewire"
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

// waitReadyz polls /readyz until it answers code and want, for up to 15 s.
func waitReadyz(t *testing.T, client *http.Client, url string, code int, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got, body := getText(t, client, url, "/readyz")
		if got == code && body == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q, want %d %q", got, body, code, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
		waitReadyz(t, client, url, http.StatusServiceUnavailable, want)
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
	if down := s.notReady(t.Context()); len(down) != 0 {
		t.Fatalf("a node with every connection busy is not ready: %v", down)
	}
}

// A node whose data directory cannot take a write is not ready, and says so (session 16
// left it ready while every put answered 507 no_space): a real full disk (a 3 MiB tmpfs
// filled by puts until the store answers no_space) is 503 "disk full: data directory";
// once gc has freed space it is ready again. A bbolt node whose database is closed is
// 503 "unreachable: metadata database" (the ping was always nil).
func TestReadyzFullDiskAndClosedDatabase(t *testing.T) {
	dir := smallFS(t, "3m")
	s := newServiceIn(t, dir, "", Config{})
	ns, cred := addUser(t, s, "alice")
	url := serve(t, s)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)}}
	defer client.CloseIdleConnections()
	waitReadyz(t, client, url, http.StatusOK, "ready\n")
	rb := remoteFor(t, url, cred)
	var full error
	var names []string
	for i := range 40 {
		name := fmt.Sprint("f", i)
		data := randBytes(uint64(200+i), 256<<10)
		if full = rb.Put(t.Context(), "", name, bytes.NewReader(data), int64(len(data))); full != nil {
			break
		}
		names = append(names, name)
	}
	if !errors.Is(full, storewire.ErrNoSpace) {
		t.Fatalf("filling a 3 MiB disk: %v, want no_space", full)
	}
	waitReadyz(t, client, url, http.StatusServiceUnavailable, "disk full: data directory\n")
	for _, name := range names {
		if err := ns.Delete(t.Context(), "", name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, client, url, http.StatusOK, "ready\n")

	if err := boltDB(t, s).Close(); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, client, url, http.StatusServiceUnavailable, "unreachable: metadata database\n")
}
