package local

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// slowPublishes makes the K-server take each relay batch holding a publication delay
// late, while slow is set: it commits the chunk after the V-server gave up waiting.
func slowPublishes(slow *atomic.Bool, delay time.Duration) func(*http.Request, []byte) {
	return func(r *http.Request, body []byte) {
		rel, err := wire.ParseRelay(body)
		if err != nil || !slow.Load() {
			return
		}
		for _, it := range rel.Items {
			if it.Kind == wire.KindPublish {
				time.Sleep(delay)
				return
			}
		}
	}
}

// TestUnackedPairsListedThenSettled: a publication whose relay got no answer in time,
// which the K-server committed after the V-server gave up on it. Its pair is listed as
// unacknowledged, then settled as the owner's failed publication reads: removed from both
// servers, the K-server included (the V-server unpublishes the chunk's ids twice, a relay
// timeout apart, so the late chunk cannot land after the removal). Pairs the K-server
// acknowledged are listed as such and kept. Before, the pair stayed listed, unmarked, and
// on the K-server for good.
func TestUnackedPairsListedThenSettled(t *testing.T) {
	const relayTimeout = time.Second
	var slow atomic.Bool
	slow.Store(true)
	d := start(t, t.TempDir(), Options{V: vserver.Config{MaxDelay: time.Millisecond, RelayTimeout: relayTimeout},
		K: kserver.Config{TestTap: slowPublishes(&slow, relayTimeout*3/2)}})
	ctx := context.Background()
	alice := newClient(t, d, "alice")

	// Acknowledged: the chunk is answered at 1.5 s, after the 1 s relay timeout, so it fails.
	_, err := alice.Publish(ctx, []client.Pair{{Key: "late.pdf", Value: []byte("host-a:/late")}}, 0, nil)
	t.Logf("publication the K-server answers late: %v", err)
	if err == nil || client.Refused(err) || !client.Settling(err) || !strings.Contains(err.Error(), "lists the chunk's 1 pair as unacknowledged and removes it from both servers") {
		t.Fatalf("publication whose relay timed out: %v", err)
	}
	l, err := alice.List(ctx)
	if err != nil || len(l) != 1 || l[0].Key != "late.pdf" || !l[0].Unacked {
		t.Fatalf("right after the failed relay alice lists %+v, %v; want late.pdf, unacknowledged", l, err)
	}
	late := l[0].ID

	// An acknowledged pair, published while the settling runs: listed as acknowledged, kept.
	slow.Store(false)
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "kept.pdf", Value: []byte("host-a:/kept")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * relayTimeout)
	for {
		if l, err = alice.List(ctx); err != nil {
			t.Fatal(err)
		}
		if len(l) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(l) != 1 || l[0].Key != "kept.pdf" || l[0].Unacked {
		t.Fatalf("after settling alice lists %+v; want kept.pdf alone, acknowledged", l)
	}
	time.Sleep(relayTimeout) // the late chunk has landed on the K-server by now (0.5 s after the failure)
	if d.K.Has(late) {
		t.Fatal("the K-server still holds the key of the chunk it committed after the V-server gave up on it: nothing names it any more")
	}
	if r := search(t, alice, "late.pdf", client.SearchOptions{}); len(r.Found) != 0 {
		t.Fatalf("the settled pair still matches: %d results", len(r.Found))
	}
	if r := search(t, alice, "kept.pdf", client.SearchOptions{}); len(r.Found) != 1 {
		t.Fatalf("the acknowledged pair: %d results", len(r.Found))
	}
}

// TestListVersionsForOlderClients: a client before List version 2 (no query) gets version
// 1, which it parses; one that asks gets version 2 with the pairs' states.
func TestListVersionsForOlderClients(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(context.Background(), []client.Pair{{Key: "a.pdf", Value: []byte("v")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	var uc wire.UserCred
	if err := json.Unmarshal(mustCred(t, alice), &uc); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM([]byte(uc.CA))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer hc.CloseIdleConnections()
	for query, want := range map[string]uint8{"": 1, "?" + wire.ListQuery: 2} {
		req, _ := http.NewRequest(http.MethodGet, uc.Endpoint+"/v1/pairs"+query, nil)
		req.SetBasicAuth(uc.User, uc.Secret)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if len(b) == 0 || b[0] != want {
			t.Fatalf("GET /v1/pairs%s: version %x, want %d", query, b[:min(len(b), 1)], want)
		}
		l, err := wire.ParseList(b)
		if err != nil || len(l.Pairs) != 1 || l.Pairs[0].State != wire.PairAcked {
			t.Fatalf("GET /v1/pairs%s: %+v, %v", query, l, err)
		}
	}
}

// TestUnackedPairsSettledAfterRestart: the marks are in vserver.db, so pairs whose relay
// failed before a restart are listed as unacknowledged after it and settled by the
// restarted V-server.
func TestUnackedPairsSettledAfterRestart(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, Options{V: vserver.Config{MaxDelay: time.Millisecond, RelayTimeout: time.Nanosecond}})
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "lost.pdf", Value: []byte("v")}, {Key: "lost-2.pdf", Value: []byte("v")}}, 0, nil); !client.Settling(err) {
		t.Fatalf("publication with the K-server out of reach: %v", err)
	}
	cred := mustCred(t, alice)
	stop(t, d)

	start(t, dir, Options{V: vserver.Config{MaxDelay: time.Millisecond, RelayTimeout: time.Second}})
	a, err := client.New(cred)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	l, err := a.List(ctx)
	if err != nil || len(l) != 2 || !l[0].Unacked || !l[1].Unacked {
		t.Fatalf("after the restart alice lists %+v, %v; want both pairs, unacknowledged", l, err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(l) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if l, err = a.List(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(l) != 0 {
		t.Fatalf("the restarted V-server did not settle the unacknowledged pairs: %+v", l)
	}
}
