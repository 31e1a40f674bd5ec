package kserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/wire"
	"github.com/veil-project/veil/internal/server"
)

var testPIR = pir.Params{Bits: 6, Slots: 8}

// kserv is a K-server serving on loopback (TLS) with a relay client holding the
// V-server's credential and one without a client certificate.
type kserv struct {
	s           *Server
	url         string
	relay, anon *http.Client
	noCert      *tls.Config
	pub         *wire.KServerPub
	stop        func()
}

func startK(t *testing.T, dir string, cfg ...Config) *kserv {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, FileKey)); err != nil {
		if err := Init(dir, InitOptions{Endpoint: "https://" + ln.Addr().String(), PIR: testPIR}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir, append(cfg, Config{})[0])
	if err != nil {
		t.Fatal(err)
	}
	rcb, _ := os.ReadFile(filepath.Join(dir, FileRelayCred))
	rc, pub, err := wire.ParseRelayCred(rcb)
	if err != nil {
		t.Fatal(err)
	}
	withCert, _ := tlsconf.ClientConfig([]byte(rc.CA), &tlsconf.Pair{Cert: []byte(rc.Cert), Key: []byte(rc.Key)})
	noCert, _ := tlsconf.ClientConfig([]byte(rc.CA), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, server.Listeners{HTTP: ln}) }()
	k := &kserv{s: s, url: "https://" + ln.Addr().String(), pub: pub, noCert: noCert,
		relay: &http.Client{Transport: &http.Transport{TLSClientConfig: withCert}},
		anon:  &http.Client{Transport: &http.Transport{TLSClientConfig: noCert}}}
	stopped := false
	k.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		k.relay.CloseIdleConnections()
		s.Close()
	}
	t.Cleanup(k.stop)
	return k
}

func (k *kserv) post(t *testing.T, c *http.Client, items ...wire.RelayItem) (int, *wire.RelayResp) {
	t.Helper()
	resp, err := c.Post(k.url+"/v1/relay", "application/octet-stream", bytes.NewReader((&wire.Relay{Items: items}).Marshal()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	rr, err := wire.ParseRelayResp(b)
	if err != nil || len(rr.Results) != len(items) {
		t.Fatalf("relay reply: %v (%d results)", err, len(rr.Results))
	}
	return resp.StatusCode, rr
}

func (k *kserv) publish(t *testing.T, items []wire.KeyItem) *wire.PublishAck {
	t.Helper()
	c, err := wire.SealChunk(k.pub, items)
	if err != nil {
		t.Fatal(err)
	}
	_, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindPublish, Payload: wire.MarshalChunk(c)})
	if rr.Results[0].Status != wire.StatusOK {
		t.Fatalf("publish: status %d", rr.Results[0].Status)
	}
	ack, err := wire.ParsePublishAck(rr.Results[0].Payload)
	if err != nil || int(ack.N) != len(items) {
		t.Fatalf("publish ack: %v", err)
	}
	return ack
}

// stamp is a query time the K-server takes even just after a restart: it refuses times
// at or before the last one it answered (restart replay protection), and this may be the
// same millisecond.
func stamp() uint64 { return uint64(time.Now().Add(2 * time.Millisecond).UnixMilli()) }

func newQuery(text string) *wire.Query {
	q := &wire.Query{Mode: wire.ModeExact, Limit: 10, Time: stamp(), Text: text}
	rand.Read(q.OneTimeKey[:])
	rand.Read(q.Nonce[:])
	return q
}

func (k *kserv) search(t *testing.T, q *wire.Query) (uint8, []wire.Matched) {
	t.Helper()
	sealed, err := wire.SealQuery(k.pub, q)
	if err != nil {
		t.Fatal(err)
	}
	_, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindQuery, Payload: sealed})
	if rr.Results[0].Status != wire.StatusOK {
		return rr.Results[0].Status, nil
	}
	ms, err := wire.ParseMatches(rr.Results[0].Payload)
	if err != nil {
		t.Fatal(err)
	}
	return wire.StatusOK, ms
}

func id(b byte) (i wire.ID) {
	i[0], i[15] = b, 0xee
	return i
}

// TestRelayQueriesAndState: the K-server alone, over loopback TLS: only the V-server's
// certificate may relay; a publication stores keys and returns private-query entries
// (none for pseudonym-restricted pairs); exact queries match with records that open under
// the one-time key; replayed and altered queries are refused; unpublication removes; the
// state survives a restart.
func TestRelayQueriesAndState(t *testing.T) {
	dir := t.TempDir()
	k := startK(t, dir)
	if code, _ := k.post(t, k.anon, wire.RelayItem{Kind: wire.KindUnpublish, Payload: (&wire.IDs{}).Marshal()}); code != http.StatusUnauthorized {
		t.Fatalf("relay without the V-server's certificate: HTTP %d", code)
	}
	ack := k.publish(t, []wire.KeyItem{{ID: id(1), Key: "report.pdf"}, {ID: id(2), Key: "photo.jpg"}, {ID: id(3), Key: "x", Pseudonyms: [][32]byte{{9}}}})
	if len(ack.Entries) != 3 || !ack.Entries[0].Placed || !ack.Entries[1].Placed || ack.Entries[2].Placed {
		t.Fatalf("entries: %+v", ack.Entries)
	}
	want := pir.Derive("report.pdf").Seal(id(1))
	if binary.BigEndian.Uint32(ack.Entries[0].Entry[:4]) != want.Hash || !bytes.Equal(ack.Entries[0].Entry[4:], want.Slot[:]) {
		t.Fatal("entry differs from the slot the key and id determine")
	}
	q := newQuery("report.pdf")
	st, ms := k.search(t, q)
	if st != wire.StatusOK || len(ms) != 1 || ms[0].ID != id(1) {
		t.Fatalf("exact: %d %+v", st, ms)
	}
	if _, err := wire.OpenMatch(q, ms[0].ID, ms[0].Record); err != nil {
		t.Fatal("match record does not open under the one-time key")
	}
	if st, _ := k.search(t, q); st != wire.StatusReplay {
		t.Fatalf("replayed query: status %d", st)
	}
	sealed, _ := wire.SealQuery(k.pub, newQuery("photo.jpg"))
	sealed[len(sealed)-5] ^= 1
	if _, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindQuery, Payload: sealed}); rr.Results[0].Status != wire.StatusNotOpened {
		t.Fatalf("altered query: status %d", rr.Results[0].Status)
	}
	_, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindUnpublish, Payload: (&wire.IDs{IDs: []wire.ID{id(2), id(9)}}).Marshal()})
	if n, err := wire.ParseN(rr.Results[0].Payload); err != nil || n != 1 || k.s.Has(id(2)) {
		t.Fatalf("unpublish: %d %v", n, err)
	}
	k.stop()
	k = startK(t, dir)
	if k.s.Pairs() != 2 || !k.s.Has(id(1)) || k.s.PIRParams() != testPIR {
		t.Fatalf("after restart: %d pairs, params %+v", k.s.Pairs(), k.s.PIRParams())
	}
	if st, ms := k.search(t, newQuery("report.pdf")); st != wire.StatusOK || len(ms) != 1 {
		t.Fatalf("after restart: %d %+v", st, ms)
	}
}

// TestPrivateQueryShare: the K-server's share of a private query, combined with a share
// computed over a replica built from the entries it returned (what the V-server does),
// finds the pair; after a restart too (the table is persistent); a DPF key for the
// wrong party or domain is refused.
func TestPrivateQueryShare(t *testing.T) {
	dir := t.TempDir()
	k := startK(t, dir)
	items := []wire.KeyItem{{ID: id(1), Key: "report.pdf"}, {ID: id(2), Key: "report.pdf"}, {ID: id(3), Key: "other"}}
	ack := k.publish(t, items)
	replica, _ := pir.NewTable(testPIR)
	for _, e := range ack.Entries {
		pe := pir.Entry{Hash: binary.BigEndian.Uint32(e.Entry[:4])}
		copy(pe.Slot[:], e.Entry[4:])
		replica.Insert(pe)
	}
	ask := func(party uint8, bits int) ([][16]byte, uint8) {
		m := pir.Derive("report.pdf")
		k0, k1, _ := dpf.Gen(uint64(m.Bucket(testPIR.Bits)), bits, rand.Reader)
		theirs := k1
		if party == 0 {
			theirs = k0
		}
		q := &wire.PIRQuery{Time: stamp(), DPFKey: theirs.Marshal()}
		rand.Read(q.OneTimeKey[:])
		rand.Read(q.Nonce[:])
		sealed, err := wire.SealPIRQuery(k.pub, q)
		if err != nil {
			t.Fatal(err)
		}
		_, rr := k.post(t, k.relay, wire.RelayItem{Kind: wire.KindPIR, Payload: sealed})
		if rr.Results[0].Status != wire.StatusOK {
			return nil, rr.Results[0].Status
		}
		a1, err := wire.OpenPIRAnswer(q, rr.Results[0].Payload)
		if err != nil {
			t.Fatal(err)
		}
		a0, _ := replica.Answer(k0)
		ids, err := m.Find(testPIR, a0, a1)
		if err != nil {
			t.Fatal(err)
		}
		return ids, wire.StatusOK
	}
	if ids, st := ask(1, testPIR.Bits); st != wire.StatusOK || len(ids) != 2 {
		t.Fatalf("private query: %d ids, status %d", len(ids), st)
	}
	k.stop()
	k = startK(t, dir)
	if ids, st := ask(1, testPIR.Bits); st != wire.StatusOK || len(ids) != 2 {
		t.Fatalf("after restart: %d ids, status %d", len(ids), st)
	}
	if _, st := ask(0, testPIR.Bits); st != wire.StatusMalformed {
		t.Fatalf("party-0 key: status %d", st)
	}
	if _, st := ask(1, testPIR.Bits+1); st != wire.StatusMalformed {
		t.Fatalf("key over the wrong domain: status %d", st)
	}
}

func TestPIREntrySizeMatchesTable(t *testing.T) {
	if wire.PIREntrySize != 4+pir.SlotSize {
		t.Fatalf("wire.PIREntrySize %d, pir entry %d", wire.PIREntrySize, 4+pir.SlotSize)
	}
}
