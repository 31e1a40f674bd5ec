package local

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/kserver"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// evilV is a V-server gone bad: it holds the real relay credential and sends the K-server
// whatever it likes.
type evilV struct {
	t    *testing.T
	url  string
	http *http.Client
	kpub *wire.KServerPub
}

func newEvilV(t *testing.T, d *Deployment, withCert bool) *evilV {
	b, err := os.ReadFile(filepath.Join(d.KDir, kserver.FileRelayCred))
	if err != nil {
		t.Fatal(err)
	}
	rc, kpub, err := wire.ParseRelayCred(b)
	if err != nil {
		t.Fatal(err)
	}
	var cert *tlsconf.Pair
	if withCert {
		cert = &tlsconf.Pair{Cert: []byte(rc.Cert), Key: []byte(rc.Key)}
	}
	tc, err := tlsconf.ClientConfig([]byte(rc.CA), cert)
	if err != nil {
		t.Fatal(err)
	}
	return &evilV{t: t, url: rc.Endpoint + "/v1/relay", http: &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}, kpub: kpub}
}

func (e *evilV) send(items ...wire.RelayItem) (int, []wire.RelayResult) {
	e.t.Helper()
	resp, err := e.http.Post(e.url, "application/octet-stream", bytes.NewReader((&wire.Relay{Items: items}).Marshal()))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	rr, err := wire.ParseRelayResp(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, rr.Results
}

func (e *evilV) status(items ...wire.RelayItem) []uint8 {
	e.t.Helper()
	_, rs := e.send(items...)
	var out []uint8
	for _, r := range rs {
		out = append(out, r.Status)
	}
	return out
}

// TestKServerDetectsAlteredAndReplayedRelays: a V-server that alters, replays, delays or
// reorders what it relays is caught by the K-server.
func TestKServerDetectsAlteredAndReplayedRelays(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	owner := newClient(t, d, "erin")
	if _, err := owner.Publish(context.Background(), []client.Pair{{Key: "k1", Value: []byte("v1")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	e := newEvilV(t, d, true)
	q, err := owner.NewQuery("k1", client.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := wire.SealQuery(e.kpub, q)
	query := func(b []byte) wire.RelayItem { return wire.RelayItem{Kind: wire.KindQuery, Payload: b} }

	altered := bytes.Clone(sealed)
	altered[len(altered)-40] ^= 0x01
	if st := e.status(query(altered)); st[0] != wire.StatusNotOpened {
		t.Fatalf("altered query: status %d", st[0])
	}
	_, rs := e.send(query(sealed))
	if rs[0].Status != wire.StatusOK {
		t.Fatalf("genuine query: status %d", rs[0].Status)
	}
	ms, _ := wire.ParseMatches(rs[0].Payload)
	if len(ms) != 1 {
		t.Fatalf("genuine query: %d matches", len(ms))
	}
	if st := e.status(query(sealed)); st[0] != wire.StatusReplay {
		t.Fatalf("replayed query: status %d", st[0])
	}
	old, _ := owner.NewQuery("k1", client.SearchOptions{})
	old.Time = uint64(time.Now().Add(-time.Hour).UnixMilli())
	oldSealed, _ := wire.SealQuery(e.kpub, old)
	if st := e.status(query(oldSealed)); st[0] != wire.StatusStale {
		t.Fatalf("hour-old query: status %d", st[0])
	}

	// Publication chunks: reordered or altered items do not open; nothing is stored.
	c, _ := wire.SealChunk(e.kpub, []wire.KeyItem{{ID: wire.ID{1}, Key: "a"}, {ID: wire.ID{2}, Key: "b"}})
	swapped := &wire.SealedChunk{Enc: c.Enc, Items: [][]byte{c.Items[1], c.Items[0]}}
	before := d.K.Pairs()
	if st := e.status(wire.RelayItem{Kind: wire.KindPublish, Payload: wire.MarshalChunk(swapped)}); st[0] != wire.StatusNotOpened {
		t.Fatalf("reordered chunk: status %d", st[0])
	}
	if d.K.Pairs() != before {
		t.Fatal("a refused chunk changed the K-server's pairs")
	}

	// Without the relay certificate the K-server answers nothing.
	if code, _ := newEvilV(t, d, false).send(query(sealed)); code != http.StatusUnauthorized {
		t.Fatalf("relay without a client certificate: HTTP %d", code)
	}
}

// TestQueryReplayedAcrossRestart: after a restart the replay cache is empty, but a query
// sealed before the restart is refused as stale.
func TestQueryReplayedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, fastMix())
	c := newClient(t, d, "frank")
	q, _ := c.NewQuery("x", client.SearchOptions{})
	e := newEvilV(t, d, true)
	sealed, _ := wire.SealQuery(e.kpub, q)
	if st := e.status(wire.RelayItem{Kind: wire.KindQuery, Payload: sealed}); st[0] != wire.StatusOK {
		t.Fatalf("first: %d", st[0])
	}
	stop(t, d)
	d = start(t, dir, fastMix())
	e = newEvilV(t, d, true)
	if st := e.status(wire.RelayItem{Kind: wire.KindQuery, Payload: sealed}); st[0] != wire.StatusStale {
		t.Fatalf("replayed after restart: status %d", st[0])
	}
}
