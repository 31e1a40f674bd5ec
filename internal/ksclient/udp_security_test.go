package ksclient_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/mle"
)

// openSession opens a UDP session by hand, as the client library would.
func openSession(t *testing.T, k *ks, p *kswire.Parsed) *kswire.Grant {
	t.Helper()
	g, err := tryOpenSession(k, p)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func tryOpenSession(k *ks, p *kswire.Parsed) (*kswire.Grant, error) {
	cfg := &tls.Config{Certificates: []tls.Certificate{p.Cert}, RootCAs: p.CAs, ServerName: "127.0.0.1"}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	resp, err := hc.Post("https://"+k.ls.Addr()+"/v1/session", "application/octet-stream", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	g, err := kswire.ParseGrant(b)
	if err != nil {
		return nil, fmt.Errorf("grant (%d %s): %w", resp.StatusCode, b, err)
	}
	return g, nil
}

// One client cannot exhaust the server's sessions.
func TestSessionsPerClientLimited(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxClientSess: 2})
	a, b := parsedCred(t, k, "alice"), parsedCred(t, k, "bob")
	openSession(t, k, a)
	openSession(t, k, a)
	if _, err := tryOpenSession(k, a); err == nil {
		t.Fatal("third session of one client granted")
	}
	openSession(t, k, b)
}

func request(t *testing.T, p *kswire.Parsed) []byte {
	t.Helper()
	bl, err := p.Current.Blind(rand.Reader, [][]byte{bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := kswire.AppendRequest(nil, &kswire.Request{Suite: p.SuiteID, KeyID: p.Current.ID(), Elements: bl.Elements})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// exchange sends pkt and reports whether an authenticated answer came back (within a
// deadline long enough for a loaded machine: only valid datagrams are sent through it).
func exchange(t *testing.T, conn *net.UDPConn, pkt []byte, key *[kswire.MACKeySize]byte) bool {
	t.Helper()
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 65536)
	n, err := conn.Read(buf)
	if err != nil {
		return false
	}
	d, err := kswire.OpenDatagram(buf[:n], key)
	return err == nil && d.Type == kswire.TypeResponse
}

// dropped sends pkt and waits until the key server counts it dropped for reason (its
// veil_ks_udp_drops_total counter grows), instead of taking a silence of a fixed time
// for a refusal: a loaded machine answered a valid datagram late, and a slow refusal
// would pass unnoticed. Nothing may have been answered by then.
func dropped(t *testing.T, k *ks, conn *net.UDPConn, pkt []byte, reason string) {
	t.Helper()
	before := k.drops(reason)
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); k.drops(reason) == before; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("datagram not dropped as %s in 10 s", reason)
		}
	}
	conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 65536)); err == nil {
		t.Fatalf("datagram dropped as %s was also answered (%d bytes)", reason, n)
	}
}

// drops is the key server's count of UDP datagrams dropped for reason.
func (k *ks) drops(reason string) int {
	k.t.Helper()
	for _, l := range strings.Split(k.metric("veil_ks_udp_drops_total"), "\n") {
		if v, ok := strings.CutPrefix(l, `veil_ks_udp_drops_total{reason="`+reason+`"} `); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				k.t.Fatalf("drop counter %q: %v", l, err)
			}
			return n
		}
	}
	return 0
}

func TestUDPRejectsReplayForgeryAndForeignSessions(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxDatagram: 2048})
	p := parsedCred(t, k, "alice")
	g1, g2 := openSession(t, k, p), openSession(t, k, p)
	ua, _ := net.ResolveUDPAddr("udp", k.ls.PacketAddr())
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := request(t, p)
	dg := func(g *kswire.Grant, seq uint64, key *[kswire.MACKeySize]byte) []byte {
		return kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: g.ID, Seq: seq, Body: body}, key)
	}
	ok5 := dg(g1, 5, &g1.MACKey)
	if !exchange(t, conn, ok5, &g1.MACKey) {
		t.Fatal("valid datagram not answered")
	}
	dropped(t, k, conn, ok5, "replay")
	dropped(t, k, conn, dg(g1, 4, &g1.MACKey), "replay") // an older sequence number
	forged := dg(g1, 6, &g1.MACKey)
	forged[30] ^= 1
	dropped(t, k, conn, forged, "forged")
	// Session 2's id with session 1's MAC key: wrong session.
	dropped(t, k, conn, dg(g2, 1, &g1.MACKey), "forged")
	var unknown kswire.Grant
	rand.Read(unknown.ID[:])
	dropped(t, k, conn, dg(&unknown, 1, &g1.MACKey), "unknown_session")
	big := kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: g1.ID, Seq: 9,
		Body: make([]byte, 4096)}, &g1.MACKey)
	dropped(t, k, conn, big, "oversized")
	if !exchange(t, conn, dg(g1, 7, &g1.MACKey), &g1.MACKey) || !exchange(t, conn, dg(g2, 1, &g2.MACKey), &g2.MACKey) {
		t.Fatal("valid datagrams after the attacks not answered")
	}
	m := k.metric("veil_ks_udp_drops_total")
	for _, reason := range []string{"replay", "forged", "unknown_session", "oversized"} {
		if !strings.Contains(m, `reason="`+reason+`"`) {
			t.Fatalf("drop reason %s not counted:\n%s", reason, m)
		}
	}
}

// udpTap is a UDP relay that records every datagram the client sends.
type udpTap struct {
	mu   sync.Mutex
	seen [][]byte
}

func startTap(t *testing.T, target string) (string, *udpTap) {
	t.Helper()
	tap := &udpTap{}
	addr := udpRelay(t, target, func(b []byte) {
		tap.mu.Lock()
		tap.seen = append(tap.seen, append([]byte(nil), b...))
		tap.mu.Unlock()
	}, nil)
	return addr, tap
}

// Blinding: deriving the same digest twice, the key server receives different bytes,
// and never the digest itself.
func TestKSNeverSeesTheSameBytesTwice(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	addr, tap := startTap(t, k.ls.PacketAddr())
	c := k.client(k.cred("alice"), "udp", ksclient.Options{UDPAddr: addr})
	d := digest("the same file")
	var keys [2][32]byte
	for i := range keys {
		ks, err := c.DeriveKeys(context.Background(), []mle.Digest{d})
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = ks[0]
	}
	if keys[0] != keys[1] {
		t.Fatal("same digest, different keys")
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	if len(tap.seen) != 2 {
		t.Fatalf("tap saw %d datagrams, want 2", len(tap.seen))
	}
	el := func(b []byte) []byte { return b[26+12 : len(b)-kswire.MACSize] }
	if bytes.Equal(el(tap.seen[0]), el(tap.seen[1])) {
		t.Fatal("the key server saw the same blinded element twice for one digest")
	}
	for _, p := range tap.seen {
		if bytes.Contains(p, d[:]) {
			t.Fatal("the digest travelled in clear")
		}
	}
}
