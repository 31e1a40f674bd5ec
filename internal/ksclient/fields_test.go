package ksclient_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/mle"
)

// Field-by-field audit of the key server's wire formats (docs/security.md, "ObliviSync and the key server: every field").
// The client side is attacked by a malicious key server holding the real certificate
// (mitm_test.go); the server side by a client holding a valid credential.

func wantIs(t *testing.T, err, class error, text string) {
	t.Helper()
	if !errors.Is(err, class) || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v, want %v naming %q", err, class, text)
	}
}

// fast is for cases where the attacker makes the key server look unreachable.
var fast = ksclient.Options{Timeout: 400 * time.Millisecond, Retries: 2}

// Evaluation response (HTTPS): every field, checked against the request and the pinned
// key, then the proof (ristretto255) or each signature (rsa).
func TestFieldsEvalResponse(t *testing.T) {
	for _, suite := range []string{"ristretto255", "rsa"} {
		t.Run(suite, func(t *testing.T) {
			k := startKS(t, initDir(t, suite), keyserver.Config{})
			u := issue(t, k, "alice")
			m := startMITM(t, k, u)
			cases := []struct {
				name  string
				alter func([]byte) []byte
				text  string
			}{
				{"version", func(b []byte) []byte { b[0] = 2; return b }, "version 2"},
				{"suite (unknown)", func(b []byte) []byte { b[1] = 9; return b }, "unknown suite"},
				{"suite (the other one)", func(b []byte) []byte { b[1] ^= 3; return b }, "answer for key"},
				{"key id", func(b []byte) []byte { b[5] ^= 1; return b }, "answer for key"},
				{"count", func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 3); return b }, "3 evaluations for 2 elements"},
				{"count zero", func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 0); return b }, "batch of 0"},
				{"length (extra byte)", func(b []byte) []byte { return append(b, 0) }, "bytes, want"},
				{"length (one byte short)", func(b []byte) []byte { return b[:len(b)-1] }, "bytes, want"},
				{"evaluation", func(b []byte) []byte { b[12+7] ^= 0x10; return b }, ""},
				{"second evaluation", func(b []byte) []byte { b[len(b)-70] ^= 0x10; return b }, ""},
			}
			if suite == "ristretto255" {
				cases = append(cases, struct {
					name  string
					alter func([]byte) []byte
					text  string
				}{"proof", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ""})
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					m.set(func(m *mitm) { m.eval = c.alter })
					cl := k.client(u.cred, "https", ksclient.Options{URL: m.url})
					_, err := cl.DeriveKeys(context.Background(), digestsN(2, c.name))
					wantIs(t, err, ksclient.ErrBadResponse, c.text)
				})
			}
			// Replay: an older authentic response, answering a newer request for the same
			// digest (the client blinds afresh each time).
			t.Run("replay of an older response", func(t *testing.T) {
				var first []byte
				m.set(func(m *mitm) {
					m.eval = func(b []byte) []byte {
						if first == nil {
							first = b
						}
						return append([]byte(nil), first...)
					}
				})
				cl := k.client(u.cred, "https", ksclient.Options{URL: m.url})
				ds := []mle.Digest{digest("same file")}
				if _, err := cl.DeriveKeys(context.Background(), ds); err != nil {
					t.Fatal(err)
				}
				_, err := cl.DeriveKeys(context.Background(), ds)
				wantIs(t, err, ksclient.ErrBadResponse, "")
			})
		})
	}
}

// HTTP status and the Veil-Reason header are TLS-protected but chosen by the key server:
// they can only refuse service (no key is ever accepted without verification).
func TestFieldsEvalStatus(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	m := startMITM(t, k, u)
	cases := []struct {
		status int
		reason string
		class  error
	}{
		{http.StatusTooManyRequests, "rate_limited", ksclient.ErrRateLimited},
		{http.StatusTooManyRequests, "in_flight", ksclient.ErrRateLimited},
		{http.StatusForbidden, "", ksclient.ErrUnauthorized},
		{http.StatusNotFound, "", ksclient.ErrUnexpected}, // not "failed verification" (issue 15 item 14)
		{http.StatusBadRequest, "", ksclient.ErrUnexpected},
		{http.StatusServiceUnavailable, "", ksclient.ErrKSUnavailable},
	}
	for _, c := range cases {
		t.Run(http.StatusText(c.status)+" "+c.reason, func(t *testing.T) {
			m.set(func(m *mitm) { m.status, m.reason = c.status, c.reason })
			cl := k.client(u.cred, "https", ksclient.Options{URL: m.url, Timeout: fast.Timeout, Retries: fast.Retries})
			keys, err := cl.DeriveKeys(context.Background(), digestsN(1, "status"))
			if !errors.Is(err, c.class) || keys != nil {
				t.Fatalf("got %d keys, %v; want none and %v", len(keys), err, c.class)
			}
		})
	}
}

// Session grant: framing is checked; the values a key server chooses for its own session
// (id, MAC key, expiry, datagram limit) can only break that session (refusal of service)
// or resize the client's batches.
func TestFieldsSessionGrant(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	m := startMITM(t, k, u)
	cases := []struct {
		name  string
		alter func([]byte) []byte
		class error
		text  string
	}{
		{"version", func(b []byte) []byte { b[0] = 2; return b }, ksclient.ErrBadResponse, "version 2"},
		{"length", func(b []byte) []byte { return append(b, 0) }, ksclient.ErrBadResponse, "session grant is 60 bytes"},
		{"max datagram below the minimum", func(b []byte) []byte { binary.BigEndian.PutUint16(b[57:], 60); return b }, ksclient.ErrBadResponse, "max datagram of 60"},
		{"session id", func(b []byte) []byte { b[3] ^= 1; return b }, ksclient.ErrKSUnavailable, ""},
		{"MAC key", func(b []byte) []byte { b[20] ^= 1; return b }, ksclient.ErrKSUnavailable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m.set(func(m *mitm) { m.grant = c.alter })
			cl := k.client(u.cred, "udp", ksclient.Options{URL: m.url, UDPAddr: k.ls.PacketAddr(), Timeout: fast.Timeout, Retries: fast.Retries})
			_, err := cl.DeriveKeys(context.Background(), digestsN(1, c.name))
			wantIs(t, err, c.class, c.text)
		})
	}
	harmless := []struct {
		name  string
		alter func([]byte) []byte
	}{
		{"expiry in the past", func(b []byte) []byte { binary.BigEndian.PutUint64(b[49:], 1); return b }},
		{"smaller max datagram", func(b []byte) []byte { binary.BigEndian.PutUint16(b[57:], 200); return b }},
	}
	want := deriveDirect(t, k, u, 5)
	for _, c := range harmless {
		t.Run(c.name+" (harmless)", func(t *testing.T) {
			m.set(func(m *mitm) { m.grant = c.alter })
			cl := k.client(u.cred, "udp", ksclient.Options{URL: m.url, UDPAddr: k.ls.PacketAddr()})
			for i := 0; i < 2; i++ {
				got, err := cl.DeriveKeys(context.Background(), digestsN(5, "harmless"))
				if err != nil || !equalKeys(got, want) {
					t.Fatalf("derivation %d: %v (keys equal: %v)", i, err, err == nil && equalKeys(got, want))
				}
			}
		})
	}
}

func deriveDirect(t *testing.T, k *ks, u user, n int) []mle.Key {
	t.Helper()
	got, err := k.client(u.cred, "https", ksclient.Options{}).DeriveKeys(context.Background(), digestsN(n, "harmless"))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalKeys(a, b []mle.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Server -> client datagrams. Without the session key (a network attacker) any change is
// dropped by the client (the request times out: refusal of service). With it (a malicious
// key server): error codes refuse service; a response body is verified like an HTTPS one.
func TestFieldsDatagramToClient(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	m := startMITM(t, k, u)
	flip := func(i int) func([]byte, *[kswire.MACKeySize]byte) []byte {
		return func(b []byte, _ *[kswire.MACKeySize]byte) []byte {
			if i < 0 {
				i += len(b)
			}
			b[i] ^= 1
			return b
		}
	}
	// reMAC rewrites an authentic datagram with the session key (a malicious key server).
	reMAC := func(f func(d *kswire.Datagram)) func([]byte, *[kswire.MACKeySize]byte) []byte {
		return func(b []byte, key *[kswire.MACKeySize]byte) []byte {
			d, err := kswire.OpenDatagram(b, key)
			if err != nil {
				return nil
			}
			d.Body = append([]byte(nil), d.Body...)
			f(d)
			return kswire.AppendDatagram(nil, d, key)
		}
	}
	var (
		fmu   sync.Mutex // first is read by the relay goroutine, which outlives a subtest
		first []byte
	)
	cases := []struct {
		name  string
		down  func([]byte, *[kswire.MACKeySize]byte) []byte
		class error
		text  string
	}{
		{"version (network)", flip(0), ksclient.ErrKSUnavailable, ""},
		{"type (network)", flip(1), ksclient.ErrKSUnavailable, ""},
		{"session id (network)", flip(5), ksclient.ErrKSUnavailable, ""},
		{"sequence (network)", flip(25), ksclient.ErrKSUnavailable, ""},
		{"body (network)", flip(40), ksclient.ErrKSUnavailable, ""},
		{"MAC (network)", flip(-1), ksclient.ErrKSUnavailable, ""},
		{"replay of an older datagram (network)", func(b []byte, _ *[kswire.MACKeySize]byte) []byte {
			fmu.Lock()
			defer fmu.Unlock()
			if first == nil {
				first = b
			}
			return first
		}, ksclient.ErrKSUnavailable, ""},
		{"type request (key server)", reMAC(func(d *kswire.Datagram) { d.Type = kswire.TypeRequest }), ksclient.ErrKSUnavailable, ""},
		{"sequence (key server)", reMAC(func(d *kswire.Datagram) { d.Seq += 100 }), ksclient.ErrKSUnavailable, ""},
		{"error rate limited (key server)", reMAC(func(d *kswire.Datagram) { d.Type, d.Body = kswire.TypeError, []byte{kswire.CodeRateLimited} }), ksclient.ErrRateLimited, ""},
		{"error revoked (key server)", reMAC(func(d *kswire.Datagram) { d.Type, d.Body = kswire.TypeError, []byte{kswire.CodeRevoked} }), ksclient.ErrUnauthorized, ""},
		{"error batch too large on one input (key server)", reMAC(func(d *kswire.Datagram) { d.Type, d.Body = kswire.TypeError, []byte{kswire.CodeBatchTooLarge} }), ksclient.ErrUnexpected, "code 5"},
		{"error unknown code (key server)", reMAC(func(d *kswire.Datagram) { d.Type, d.Body = kswire.TypeError, []byte{77} }), ksclient.ErrBadResponse, "code 77"},
		{"error long body (key server)", reMAC(func(d *kswire.Datagram) { d.Type, d.Body = kswire.TypeError, []byte{1, 1} }), ksclient.ErrBadResponse, "malformed error datagram"},
		{"response body (key server)", reMAC(func(d *kswire.Datagram) { d.Body[20] ^= 1 }), ksclient.ErrBadResponse, ""},
		{"response count (key server)", reMAC(func(d *kswire.Datagram) { d.Body[11] = 2 }), ksclient.ErrBadResponse, "2 evaluations for 1 elements"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fmu.Lock()
			first = nil
			fmu.Unlock()
			m.set(func(m *mitm) { m.down = nil })
			cl := k.client(u.cred, "udp", ksclient.Options{URL: m.url, UDPAddr: m.udp, Timeout: fast.Timeout, Retries: fast.Retries})
			if strings.HasPrefix(c.name, "replay") { // let one authentic answer through first
				m.set(func(m *mitm) { m.down = c.down })
				if _, err := cl.DeriveKeys(context.Background(), digestsN(1, "first")); err != nil {
					t.Fatal(err)
				}
			}
			m.set(func(m *mitm) { m.down = c.down })
			_, err := cl.DeriveKeys(context.Background(), digestsN(1, c.name))
			wantIs(t, err, c.class, c.text)
		})
	}
}

// Evaluation request, as a client with a valid credential may send it: every field is
// checked by the server before anything is charged or evaluated.
func TestFieldsEvalRequest(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxBatch: 4})
	u := issue(t, k, "alice")
	good := request(t, u.parsed) // one ristretto255 element
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{u.parsed.Cert}, RootCAs: u.parsed.CAs, ServerName: "127.0.0.1"}}}
	post := func(b []byte) (int, string) {
		resp, err := hc.Post("https://"+k.ls.Addr()+"/v1/evaluate", "application/octet-stream", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if st, body := post(good); st != http.StatusOK {
		t.Fatalf("valid request: %d %s", st, body)
	}
	mut := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	five := mut(func(b []byte) []byte {
		binary.BigEndian.PutUint16(b[10:], 5)
		for i := 0; i < 4; i++ {
			b = append(b, good[12:]...)
		}
		return b
	})
	cases := []struct {
		name   string
		body   []byte
		status int
		text   string
	}{
		{"version", mut(func(b []byte) []byte { b[0] = 2; return b }), 400, "version 2"},
		{"suite (unknown)", mut(func(b []byte) []byte { b[1] = 9; return b }), 400, "unknown suite"},
		{"suite (rsa for a ristretto255 key)", mut(func(b []byte) []byte { b[1] = 2; return b }), 404, "is not served here"},
		{"key id", mut(func(b []byte) []byte { b[2] ^= 1; return b }), 404, "is not served here"},
		{"count zero", mut(func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 0); return b }), 400, "batch of 0"},
		{"count not dividing the body", mut(func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 3); return b }), 400, "do not split into 3"},
		{"count splitting the element", mut(func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 2); return b }), 400, ""},
		{"count above the server's limit", five, 413, "exceeds the limit of 4"},
		{"element (not canonical)", mut(func(b []byte) []byte { copy(b[12:], bytes.Repeat([]byte{0xff}, 32)); return b }), 400, ""},
		{"element (identity)", mut(func(b []byte) []byte { copy(b[12:], make([]byte, 32)); return b }), 400, ""},
		{"trailing byte", append(append([]byte(nil), good...), 0), 400, "element is 33 bytes, want 32"},
		{"truncated header", good[:11], 400, "shorter than the 12-byte header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, body := post(c.body)
			if st != c.status || !strings.Contains(body, c.text) || strings.Count(strings.TrimSpace(body), "\n") != 0 {
				t.Fatalf("got %d %q, want %d naming %q on one line", st, body, c.status, c.text)
			}
		})
	}
}

// The count is what the rate limit charges: a client cannot claim fewer elements than it
// sends (the body must split into exactly n), so n evaluations cost n.
func TestFieldsEvalRequestCountCharged(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{RateLimit: keyserver.RateLimit{
		Mode: keyserver.ModeBounded, Q: 3, Epoch: 24 * time.Hour}})
	u := issue(t, k, "alice")
	cl := k.client(u.cred, "https", ksclient.Options{})
	_, err := cl.DeriveKeys(context.Background(), digestsN(4, "count"))
	wantIs(t, err, ksclient.ErrRateLimited, "")
	if _, err := cl.DeriveKeys(context.Background(), digestsN(3, "count")); err != nil {
		t.Fatalf("3 of a budget of 3: %v", err)
	}
}

// Client -> server datagrams: framing, type, session, sequence, body and MAC.
func TestFieldsDatagramToServer(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{MaxDatagram: 2048})
	u := issue(t, k, "alice")
	g := openSession(t, k, u.parsed)
	conn := dialUDP(t, k)
	body := request(t, u.parsed)
	seq := uint64(0)
	next := func(typ byte, b []byte) []byte {
		seq++
		return kswire.AppendDatagram(nil, &kswire.Datagram{Type: typ, Session: g.ID, Seq: seq, Body: b}, &g.MACKey)
	}
	withMAC := func(b []byte) []byte {
		raw := append([]byte(nil), b[:len(b)-kswire.MACSize]...)
		return appendMAC(raw, &g.MACKey)
	}
	cases := []struct {
		name   string
		pkt    func() []byte
		reason string
	}{
		{"version", func() []byte { b := next(kswire.TypeRequest, body); b[0] = 2; return withMAC(b) }, "malformed"},
		{"type response", func() []byte { return next(kswire.TypeResponse, body) }, "malformed"},
		{"type unknown", func() []byte { return next(9, body) }, "malformed"},
		{"session id", func() []byte { b := next(kswire.TypeRequest, body); b[4] ^= 1; return withMAC(b) }, "unknown_session"},
		{"sequence (replayed)", func() []byte {
			return kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: g.ID, Seq: seq, Body: body}, &g.MACKey)
		}, "replay"},
		{"body", func() []byte { b := next(kswire.TypeRequest, body); b[30] ^= 1; return b }, "forged"},
		{"MAC", func() []byte { b := next(kswire.TypeRequest, body); b[len(b)-1] ^= 1; return b }, "forged"},
		{"truncated", func() []byte { return next(kswire.TypeRequest, body)[:40] }, "malformed"},
	}
	ok := func() {
		t.Helper()
		if typ, _ := exchangeType(t, conn, next(kswire.TypeRequest, body), &g.MACKey); typ != kswire.TypeResponse {
			t.Fatal("valid datagram not answered")
		}
	}
	ok()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectDrop(t, k, conn, c.pkt(), c.reason)
			ok()
		})
	}
	// A well-formed, authentic datagram whose body is not a request: an error datagram.
	if typ, b := exchangeType(t, conn, next(kswire.TypeRequest, []byte{1, 2, 3}), &g.MACKey); typ != kswire.TypeError || !bytes.Equal(b, []byte{kswire.CodeBadRequest}) {
		t.Fatalf("bad body: type %d body %x, want an error datagram with code %d", typ, b, kswire.CodeBadRequest)
	}
}

func appendMAC(b []byte, key *[kswire.MACKeySize]byte) []byte {
	m := hmac.New(sha256.New, key[:])
	m.Write(b)
	return m.Sum(b)
}

func dialUDP(t *testing.T, k *ks) *net.UDPConn {
	t.Helper()
	ua, _ := net.ResolveUDPAddr("udp", k.ls.PacketAddr())
	conn, err := net.DialUDP("udp", nil, ua)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// exchangeType sends pkt and returns the type and body of an authenticated answer, or 0
// when none came back.
func exchangeType(t *testing.T, conn *net.UDPConn, pkt []byte, key *[kswire.MACKeySize]byte) (byte, []byte) {
	t.Helper()
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // an answer is expected: a loaded machine may be slow
	buf := make([]byte, 65536)
	n, err := conn.Read(buf)
	if err != nil {
		return 0, nil
	}
	d, err := kswire.OpenDatagram(buf[:n], key)
	if err != nil {
		return 0, nil
	}
	return d.Type, append([]byte(nil), d.Body...)
}

// expectDrop sends pkt and waits (up to 10 s: no timing assumption) until the server counts
// it as dropped for one of reasons; then nothing may have come back for it.
func expectDrop(t *testing.T, k *ks, conn *net.UDPConn, pkt []byte, reasons ...string) {
	t.Helper()
	sum := func() (n float64) {
		for _, r := range reasons {
			n += dropCount(k, r)
		}
		return n
	}
	before := sum()
	if _, err := conn.Write(pkt); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); sum() <= before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("drop not counted as %v within 10 s", reasons)
		}
	}
	conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := conn.Read(make([]byte, 65536)); err == nil {
		t.Fatalf("a dropped datagram was answered (%d bytes)", n)
	}
}

// dropCount is the server's count of UDP drops for reason.
func dropCount(k *ks, reason string) float64 {
	for _, l := range strings.Split(k.metric("veil_ks_udp_drops_total"), "\n") {
		if strings.Contains(l, `reason="`+reason+`"`) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return 0
}

// A session's datagrams stop being answered once its expiry (server-side state) passes.
func TestFieldsDatagramSessionExpiry(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{SessionTTL: time.Second})
	u := issue(t, k, "alice")
	g := openSession(t, k, u.parsed)
	conn := dialUDP(t, k)
	body := request(t, u.parsed)
	dg := func(seq uint64) []byte {
		return kswire.AppendDatagram(nil, &kswire.Datagram{Type: kswire.TypeRequest, Session: g.ID, Seq: seq, Body: body}, &g.MACKey)
	}
	if typ, _ := exchangeType(t, conn, dg(1), &g.MACKey); typ != kswire.TypeResponse {
		t.Fatal("fresh session not answered")
	}
	time.Sleep(time.Until(g.Expiry) + 1100*time.Millisecond)    // past the expiry the grant carries (the server's own)
	expectDrop(t, k, conn, dg(2), "expired", "unknown_session") // pruned sessions are unknown

}

// The TLS version is negotiated before anything else: both ends require TLS 1.3, so
// neither a client nor a server offering at most TLS 1.2 gets a connection (no downgrade).
func TestFieldsTLSVersion(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MaxVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{u.parsed.Cert}, RootCAs: u.parsed.CAs, ServerName: "127.0.0.1"}}}
	if resp, err := old.Post("https://"+k.ls.Addr()+"/v1/evaluate", "application/octet-stream", bytes.NewReader(request(t, u.parsed))); err == nil {
		resp.Body.Close()
		t.Fatalf("TLS 1.2 client answered %d", resp.StatusCode)
	}
	cert, err := tls.LoadX509KeyPair(k.dir+"/server.crt", k.dir+"/server.key")
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MaxVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	cl := k.client(u.cred, "https", ksclient.Options{URL: "https://" + l.Addr().String(), Timeout: fast.Timeout, Retries: fast.Retries})
	_, err = cl.DeriveKeys(context.Background(), digestsN(1, "tls"))
	wantIs(t, err, ksclient.ErrKSUnavailable, "protocol version")
}

// A redirect is an answer like any other status: the client does not follow it (it would
// carry the request, without TLS if the target says http://, to wherever the answer points).
func TestFieldsEvalRedirectNotFollowed(t *testing.T) {
	k := startKS(t, initDir(t, "ristretto255"), keyserver.Config{})
	u := issue(t, k, "alice")
	var hits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	t.Cleanup(plain.Close)
	cert, err := tls.LoadX509KeyPair(k.dir+"/server.crt", k.dir+"/server.key")
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	cl := k.client(u.cred, "https", ksclient.Options{URL: "https://" + l.Addr().String(), Timeout: fast.Timeout, Retries: fast.Retries})
	_, err = cl.DeriveKeys(context.Background(), digestsN(1, "redirect"))
	wantIs(t, err, ksclient.ErrUnexpected, "http 307")
	if n := hits.Load(); n != 0 {
		t.Fatalf("the client followed the redirect: %d plain-HTTP requests", n)
	}
}
