package ksclient_test

import (
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/keyserver"
	"github.com/veil-project/veil/internal/ksclient"
	"github.com/veil-project/veil/internal/kswire"
	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/server"
)

// ks is a real key server on loopback, started for one test.
type ks struct {
	t    *testing.T
	dir  string
	cfg  keyserver.Config
	srv  *keyserver.Server
	ls   server.Listeners // the running server's sockets
	stop func()
}

func initDir(t *testing.T, suite string) string {
	t.Helper()
	dir := t.TempDir()
	if err := keyserver.Init(dir, keyserver.InitOptions{Suite: suite}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func startKS(t *testing.T, dir string, cfg keyserver.Config) *ks {
	t.Helper()
	if cfg.HTTPSAddr == "" {
		cfg.HTTPSAddr = "127.0.0.1:0"
	}
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = "127.0.0.1:0"
	}
	if cfg.RateLimit.Mode == "" {
		cfg.RateLimit = keyserver.RateLimit{Mode: keyserver.ModeNone}
	}
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = 50 * time.Millisecond
	}
	k := &ks{t: t, dir: dir, cfg: cfg}
	k.start()
	t.Cleanup(func() { k.stop() })
	replicasMu.Lock()
	replicas[dir] = append(replicas[dir], k)
	replicasMu.Unlock()
	t.Cleanup(func() { replicasMu.Lock(); delete(replicas, dir); replicasMu.Unlock() })
	return k
}

// replicas are the running servers of each key server directory.
var (
	replicasMu sync.Mutex
	replicas   = map[string][]*ks{}
)

// reloadAll makes every server of k's directory load the directory now: the reload loop
// (tested on its own in TestRevokedClientRefused) runs on its own schedule.
func (k *ks) reloadAll() {
	k.t.Helper()
	replicasMu.Lock()
	rs := append([]*ks(nil), replicas[k.dir]...)
	replicasMu.Unlock()
	for _, r := range rs {
		if err := r.srv.Reload(); err != nil {
			k.t.Fatal(err)
		}
	}
}

func (k *ks) start() {
	k.t.Helper()
	srv, err := keyserver.Open(context.Background(), k.dir, k.cfg)
	if err != nil {
		k.t.Fatal(err)
	}
	ls, err := keyserver.Listen(k.cfg)
	if err != nil {
		srv.Close()
		k.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ls) }()
	k.srv, k.ls = srv, ls
	stopped := false
	k.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			k.t.Errorf("serve: %v", err)
		}
		if err := srv.Close(); err != nil {
			k.t.Errorf("close: %v", err)
		}
	}
}

// restart stops the server gracefully and starts it again on the same ports.
func (k *ks) restart() {
	k.t.Helper()
	k.cfg.HTTPSAddr, k.cfg.UDPAddr = k.ls.Addr(), k.ls.PacketAddr()
	k.stop()
	k.start()
}

// cred issues a credential for name pointing at this server's bound addresses.
func (k *ks) cred(name string) *ksclient.Credential {
	k.t.Helper()
	return issue(k.t, k, name).cred
}

// user is one issued client credential: as the client library loads it from its file,
// as the raw-protocol tests read it, and its bytes.
type user struct {
	cred   *ksclient.Credential
	parsed *kswire.Parsed
	raw    []byte
}

// issue adds client name to k's directory (credential pointing at k's bound addresses),
// writes its credential file and loads it, and lets the servers see the new client.
func issue(t *testing.T, k *ks, name string) user {
	t.Helper()
	b, err := keyserver.AddClient(k.dir, name, keyserver.AddOptions{URL: "https://" + k.ls.Addr(), UDP: k.ls.PacketAddr()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".cred")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := ksclient.LoadCredential(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kswire.ParseCredential(b)
	if err != nil {
		t.Fatal(err)
	}
	k.reloadAll()
	return user{c, p, b}
}

func (k *ks) client(c *ksclient.Credential, transport string, opts ksclient.Options) *ksclient.Client {
	k.t.Helper()
	opts.Transport = transport
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second // generous: a loaded CI machine is slow; tests of timeouts set their own
	}
	cl, err := ksclient.New(c, opts)
	if err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { cl.Close() })
	return cl
}

// metric returns the sum of the /metrics lines starting with prefix.
func (k *ks) metric(prefix string) string {
	k.t.Helper()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: k.tlsNoClient()}}
	resp, err := hc.Get("https://" + k.ls.Addr() + "/metrics")
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func digest(s string) mle.Digest { return mle.Digest(sha256.Sum256([]byte(s))) }

func digestsN(n int, salt string) []mle.Digest {
	ds := make([]mle.Digest, n)
	for i := range ds {
		ds[i] = digest(salt + string(rune(i)))
	}
	return ds
}

func parsedCred(t *testing.T, k *ks, name string) *kswire.Parsed {
	t.Helper()
	return issue(t, k, name).parsed
}

// udpRelay forwards datagrams from a loopback socket to target and each answer back to the
// last sender: up (if set) sees every datagram sent, down (if set) rewrites each answer,
// or drops it by returning nil. It returns the relay's address.
func udpRelay(t *testing.T, target string, up func([]byte), down func([]byte) []byte) string {
	front, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ta, _ := net.ResolveUDPAddr("udp", target)
	back, err := net.DialUDP("udp", nil, ta)
	if err != nil {
		t.Fatal(err)
	}
	var client *net.UDPAddr
	var cmu sync.Mutex
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := front.ReadFromUDP(buf)
			if err != nil {
				return
			}
			cmu.Lock()
			client = from
			cmu.Unlock()
			if up != nil {
				up(buf[:n])
			}
			back.Write(buf[:n])
		}
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, err := back.Read(buf)
			if err != nil {
				return
			}
			out := append([]byte(nil), buf[:n]...)
			if down != nil {
				if out = down(out); out == nil {
					continue
				}
			}
			cmu.Lock()
			to := client
			cmu.Unlock()
			front.WriteToUDP(out, to)
		}
	}()
	t.Cleanup(func() { front.Close(); back.Close() })
	return front.LocalAddr().String()
}
