package keyserver

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/oprf"
	"github.com/veil-project/veil/internal/testutil"
)

// The key server's own handlers, driven by hand-built wire messages over real TLS and UDP
// on loopback (the ksclient package tests the same server through its client).

// handlerServer serves a fresh directory over HTTPS and UDP; it returns the server, its
// listeners' addresses and alice's parsed credential.
func handlerServer(t *testing.T, cfg Config) (s *Server, httpsAddr, udpAddr string, alice *kswire.Parsed) {
	t.Helper()
	dir := t.TempDir()
	if err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := AddClient(dir, "alice", AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if alice, err = kswire.ParseCredential(b); err != nil {
		t.Fatal(err)
	}
	s, ls := serveOn(t, dir, cfg, "127.0.0.1:0")
	return s, ls.Addr(), ls.PacketAddr(), alice
}

func httpsClient(p *kswire.Parsed, withCert bool) *http.Client {
	cfg := &tls.Config{RootCAs: p.CAs, ServerName: "127.0.0.1"}
	if withCert {
		cfg.Certificates = []tls.Certificate{p.Cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

func post(t *testing.T, hc *http.Client, url string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	resp, err := hc.Post(url, "application/octet-stream", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp.Header
}

// blindRequest blinds inputs under p's current key and encodes the request.
func blindRequest(t *testing.T, p *kswire.Parsed, keyID oprf.KeyID, inputs ...[]byte) (*oprf.Blinded, []byte) {
	t.Helper()
	bl, err := p.Current.Blind(rand.Reader, inputs)
	if err != nil {
		t.Fatal(err)
	}
	req, err := kswire.AppendRequest(nil, &kswire.Request{Suite: p.SuiteID, KeyID: keyID, Elements: bl.Elements})
	if err != nil {
		t.Fatal(err)
	}
	return bl, req
}

// finalize verifies and unblinds an evaluation response.
func finalize(t *testing.T, p *kswire.Parsed, bl *oprf.Blinded, body []byte) [][oprf.KeySize]byte {
	t.Helper()
	r, err := kswire.ParseResponse(body, p.Current, len(bl.Elements))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := p.Current.Finalize(bl, r.Evals, r.Proof)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// POST /v1/evaluate answers a verifiable evaluation and refuses, with the documented
// status, a client without a certificate, a malformed body, an oversized batch, an
// unknown key and a spent rate-limit budget.
func TestHTTPEvaluateHandler(t *testing.T) {
	_, addr, _, alice := handlerServer(t, Config{MaxBatch: 4,
		RateLimit: RateLimit{Mode: ModeBounded, Q: 6, Epoch: time.Hour}})
	url := "https://" + addr + "/v1/evaluate"
	hc := httpsClient(alice, true)
	in := []byte("the same input, twice")
	bl, req := blindRequest(t, alice, alice.Current.ID(), in, []byte("another"))
	code, body, _ := post(t, hc, url, req)
	if code != http.StatusOK {
		t.Fatalf("evaluate: %d %s", code, body)
	}
	k1 := finalize(t, alice, bl, body)
	bl, req = blindRequest(t, alice, alice.Current.ID(), in)
	code, body, _ = post(t, hc, url, req)
	if code != http.StatusOK {
		t.Fatalf("evaluate: %d %s", code, body)
	}
	if k2 := finalize(t, alice, bl, body); k2[0] != k1[0] || k1[0] == k1[1] {
		t.Fatal("one input gave two keys, or two inputs one key")
	}

	five := make([][]byte, 5)
	for i := range five {
		five[i] = []byte{byte(i)}
	}
	_, tooMany := blindRequest(t, alice, alice.Current.ID(), five...)
	_, unknown := blindRequest(t, alice, oprf.KeyID{1, 2, 3}, in)
	for _, c := range []struct {
		name string
		hc   *http.Client
		body []byte
		want int
	}{
		{"no client certificate", httpsClient(alice, false), req, http.StatusForbidden},
		{"malformed", hc, []byte{kswire.Version, 0xff}, http.StatusBadRequest},
		{"batch over MaxBatch", hc, tooMany, http.StatusRequestEntityTooLarge},
		{"unknown key", hc, unknown, http.StatusNotFound},
	} {
		if code, body, _ := post(t, c.hc, url, c.body); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	// 3 of the 6 evaluations are spent: 3 more pass, the next is refused.
	_, three := blindRequest(t, alice, alice.Current.ID(), in, in, in)
	if code, body, _ := post(t, hc, url, three); code != http.StatusOK {
		t.Fatalf("within budget: %d %s", code, body)
	}
	if code, _, h := post(t, hc, url, req); code != http.StatusTooManyRequests || h.Get("Veil-Reason") != "rate_limited" {
		t.Fatalf("over budget: %d, reason %q", code, h.Get("Veil-Reason"))
	}
	if m := metric(t, alice, addr, `veil_ks_rejections_total{reason="rate_limited",transport="https"}`); m != "1" {
		t.Fatalf("rate_limited rejections on /metrics: %q", m)
	}
}

// POST /v1/session grants a session; datagrams under it are answered, and forged,
// replayed, foreign or malformed ones are dropped or refused as the format says.
func TestUDPSessionHandler(t *testing.T) {
	_, addr, udpAddr, alice := handlerServer(t, Config{MaxBatch: 4, RateLimit: RateLimit{Mode: ModeNone}})
	hc := httpsClient(alice, true)
	if code, _, _ := post(t, httpsClient(alice, false), "https://"+addr+"/v1/session", nil); code != http.StatusForbidden {
		t.Fatalf("session without a certificate: %d", code)
	}
	code, body, _ := post(t, hc, "https://"+addr+"/v1/session", nil)
	g, err := kswire.ParseGrant(body)
	if code != http.StatusOK || err != nil {
		t.Fatalf("session: %d %v", code, err)
	}
	conn, err := net.Dial("udp", udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(seq uint64, body []byte, key *[kswire.MACKeySize]byte, id [kswire.SessionIDSize]byte) {
		t.Helper()
		pkt := kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: id, Seq: seq, Body: body}, key)
		if _, err := conn.Write(pkt); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() *kswire.Datagram {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound on a hang, not a measurement
		buf := make([]byte, 65536)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		d, err := kswire.OpenDatagram(buf[:n], &g.MACKey)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	in := []byte("over udp")
	bl, req := blindRequest(t, alice, alice.Current.ID(), in)
	send(1, req, &g.MACKey, g.ID)
	if d := recv(); d.Type != kswire.TypeResponse || d.Seq != 1 || d.Session != g.ID {
		t.Fatalf("answer: type %d seq %d", d.Type, d.Seq)
	} else if keys := finalize(t, alice, bl, d.Body); keys[0] == ([oprf.KeySize]byte{}) {
		t.Fatal("zero key")
	}

	// Dropped without an answer, each counted under its reason.
	dropped := func(reason, want string) {
		t.Helper()
		series := `veil_ks_udp_drops_total{reason="` + reason + `"}`
		testutil.WaitFor(t, 20*time.Second, series+" = "+want+" on /metrics", func() bool {
			return metric(t, alice, addr, series) == want
		})
	}
	send(1, req, &g.MACKey, g.ID) // replay
	dropped("replay", "1")
	var other [kswire.MACKeySize]byte
	send(2, req, &other, g.ID) // wrong MAC key
	dropped("forged", "1")
	send(2, req, &g.MACKey, [kswire.SessionIDSize]byte{9}) // no such session
	dropped("unknown_session", "1")
	if _, err := conn.Write([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	dropped("malformed", "1")

	// Authenticated but refused: an error datagram with the code.
	_, unknown := blindRequest(t, alice, oprf.KeyID{1}, in)
	send(3, unknown, &g.MACKey, g.ID)
	if d := recv(); d.Type != kswire.TypeError || !bytes.Equal(d.Body, []byte{kswire.CodeUnknownKey}) || d.Seq != 3 {
		t.Fatalf("unknown key: type %d body %v", d.Type, d.Body)
	}
	send(4, []byte{kswire.Version}, &g.MACKey, g.ID)
	if d := recv(); d.Type != kswire.TypeError || !bytes.Equal(d.Body, []byte{kswire.CodeBadRequest}) {
		t.Fatalf("malformed request: type %d body %v", d.Type, d.Body)
	}
	// The session still works after all of that.
	bl, req = blindRequest(t, alice, alice.Current.ID(), in)
	send(5, req, &g.MACKey, g.ID)
	if d := recv(); d.Type != kswire.TypeResponse || d.Seq != 5 {
		t.Fatalf("after the drops: type %d seq %d", d.Type, d.Seq)
	} else {
		finalize(t, alice, bl, d.Body)
	}
}

// metric returns the value of one series on the server's /metrics page ("" if absent).
func metric(t *testing.T, p *kswire.Parsed, addr, series string) string {
	t.Helper()
	resp, err := httpsClient(p, false).Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}
