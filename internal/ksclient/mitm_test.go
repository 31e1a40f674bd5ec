package ksclient_test

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/veil-project/veil/internal/kswire"
)

// mitm is a malicious key server: it holds the real server certificate (so the client's
// TLS accepts it) and relays to the real key server on loopback, presenting the victim's
// own client certificate, and it can alter or replace anything it relays. Over UDP it
// knows the session MAC key from the grant it relayed.
type mitm struct {
	url, udp string
	mu       sync.Mutex
	key      [kswire.MACKeySize]byte
	grant    func([]byte) []byte                           // alters a session grant
	eval     func([]byte) []byte                           // alters an HTTPS evaluation response
	status   int                                           // answers every evaluation with this status instead
	reason   string                                        // Veil-Reason header with status
	down     func([]byte, *[kswire.MACKeySize]byte) []byte // alters server->client datagrams (nil: drop)
}

func startMITM(t *testing.T, k *ks, u user) *mitm {
	t.Helper()
	m := &mitm{}
	cert, err := tls.LoadX509KeyPair(filepath.Join(k.dir, "server.crt"), filepath.Join(k.dir, "server.key"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{u.parsed.Cert}, RootCAs: u.parsed.CAs, ServerName: "127.0.0.1"}}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		status, reason, grant, eval := m.status, m.reason, m.grant, m.eval
		m.mu.Unlock()
		if status != 0 && r.URL.Path == "/v1/evaluate" {
			if reason != "" {
				w.Header().Set("Veil-Reason", reason)
			}
			http.Error(w, "refused by the test", status)
			return
		}
		body, _ := io.ReadAll(r.Body)
		resp, err := up.Post("https://"+k.ls.Addr()+r.URL.Path, "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			switch r.URL.Path {
			case "/v1/session":
				if g, err := kswire.ParseGrant(out); err == nil {
					m.mu.Lock()
					m.key = g.MACKey
					m.mu.Unlock()
				}
				if grant != nil {
					out = grant(append([]byte(nil), out...))
				}
			case "/v1/evaluate":
				if eval != nil {
					out = eval(append([]byte(nil), out...))
				}
			}
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(out)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	m.url = "https://" + l.Addr().(*net.TCPAddr).String()
	m.udp = m.relayUDP(t, k.ls.PacketAddr())
	return m
}

func (m *mitm) set(f func(m *mitm)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

// relayUDP forwards datagrams to the real server and its answers, through down, back.
func (m *mitm) relayUDP(t *testing.T, target string) string {
	return udpRelay(t, target, nil, func(out []byte) []byte {
		m.mu.Lock()
		down, key := m.down, m.key
		m.mu.Unlock()
		if down != nil {
			return down(out, &key)
		}
		return out
	})
}
