package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"
)

// httpServer is the smallest server of the veil shape: /healthz, /metrics and /slow (which
// answers when release is closed, or fails when its request is cancelled).
type httpServer struct {
	reg      *prometheus.Registry
	started  chan struct{}
	release  chan struct{}
	timeout  time.Duration
	canceled chan struct{}
	closed   int
}

func newHTTPServer(timeout time.Duration) *httpServer {
	return &httpServer{reg: NewRegistry(), started: make(chan struct{}, 1), release: make(chan struct{}),
		timeout: timeout, canceled: make(chan struct{}, 1)}
}

func (h *httpServer) Serve(ctx context.Context, ls Listeners) error {
	mux := http.NewServeMux()
	Mount(mux, h.reg, nil)
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		h.started <- struct{}{}
		select {
		case <-h.release:
			io.WriteString(w, "done")
		case <-r.Context().Done():
			h.canceled <- struct{}{}
		}
	})
	return ServeHTTP(ctx, &http.Server{Handler: mux}, ls.HTTP, h.timeout)
}

func (h *httpServer) Close() error { h.closed++; return nil }

func get(t *testing.T, url string) (string, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func start(t *testing.T, s Server) (Listeners, context.CancelFunc, chan error) {
	t.Helper()
	ls, err := Listen("127.0.0.1:0", "-")
	if err != nil {
		t.Fatal(err)
	}
	if ls.Packet != nil {
		t.Fatal(`"-" bound a datagram socket`)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ls) }()
	return ls, cancel, done
}

func TestHealthMetricsAndStop(t *testing.T) {
	h := newHTTPServer(0)
	ls, cancel, done := start(t, h)
	if body, err := get(t, "http://"+ls.Addr()+"/healthz"); err != nil || body != "ok\n" {
		t.Fatalf("/healthz: %q %v", body, err)
	}
	if body, err := get(t, "http://"+ls.Addr()+"/metrics"); err != nil || !strings.Contains(body, "go_goroutines") {
		t.Fatalf("/metrics lacks the Go collector: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("a stop by ctx returned %v", err)
	}
	if _, err := net.Dial("tcp", ls.Addr()); err == nil {
		t.Fatal("the listener is still open after Serve returned")
	}
}

func TestDrainLetsRequestsFinish(t *testing.T) {
	h := newHTTPServer(0)
	ls, cancel, done := start(t, h)
	got := make(chan string, 1)
	go func() { b, _ := get(t, "http://"+ls.Addr()+"/slow"); got <- b }()
	<-h.started
	cancel() // shutdown begins with a request in flight
	close(h.release)
	if b := <-got; b != "done" {
		t.Fatalf("in-flight request got %q", b)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestDrainCutShort(t *testing.T) {
	h := newHTTPServer(time.Millisecond)
	ls, cancel, done := start(t, h)
	go get(t, "http://"+ls.Addr()+"/slow")
	<-h.started
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "did not finish within") {
		t.Fatalf("a drain past its timeout returned %v", err)
	}
	<-h.canceled // the stuck request's context was cancelled
}

func TestShutdownTimeoutDefault(t *testing.T) {
	if ShutdownTimeout(0) != DefaultShutdownTimeout || ShutdownTimeout(time.Second) != time.Second {
		t.Fatal("ShutdownTimeout does not default")
	}
}

type failing struct {
	err    error
	closed int
}

func (f *failing) Serve(ctx context.Context, ls Listeners) error { ls.Close(); return f.err }
func (f *failing) Close() error                                  { f.closed++; return nil }

func TestGroupFirstErrorStopsAll(t *testing.T) {
	h := newHTTPServer(0)
	hl, err := Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := Listen("127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if fl.PacketAddr() == "" {
		t.Fatal("no datagram socket bound")
	}
	boom := errors.New("boom")
	f := &failing{err: boom}
	var g Group
	g.Add("web", h, hl)
	g.Add("broken", f, fl)
	err = g.Serve(context.Background())
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "broken: ") {
		t.Fatalf("group returned %v, want the failure named", err)
	}
	if _, err := net.Dial("tcp", hl.Addr()); err == nil {
		t.Fatal("the healthy server was not stopped")
	}
	if err := g.Close(); err != nil || h.closed != 1 || f.closed != 1 {
		t.Fatalf("close: %v (closed %d, %d)", err, h.closed, f.closed)
	}
}

func TestGroupCloseWithoutServe(t *testing.T) {
	ls, err := Listen("127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := newHTTPServer(0)
	var g Group
	g.Add("web", h, ls)
	if err := g.Close(); err != nil || h.closed != 1 {
		t.Fatalf("close: %v, closed %d", err, h.closed)
	}
	if _, err := net.Dial("tcp", ls.Addr()); err == nil {
		t.Fatal("listener left open by Close without Serve")
	}
	if ls2, err := net.ListenPacket("udp", ls.PacketAddr()); err != nil {
		t.Fatalf("datagram socket left open: %v", err)
	} else {
		ls2.Close()
	}
}

func TestListenRefusesBadAddress(t *testing.T) {
	if _, err := Listen("nonsense", ""); err == nil {
		t.Fatal("bound a nonsense address")
	}
	if _, err := Listen("127.0.0.1:0", "nonsense"); err == nil {
		t.Fatal("bound a nonsense UDP address")
	}
	// An address in use is named once (found deploying: "listen 127.0.0.1:7480: listen
	// tcp 127.0.0.1:7480: bind: address already in use").
	ls, err := Listen("127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	_, err = Listen(ls.Addr(), "")
	if err == nil || strings.Count(err.Error(), ls.Addr()) != 1 || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("listen on an address in use: %v", err)
	}
}

func TestOpenState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := OpenState(path, "test server", "1", time.Second, []byte("a"), []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("a")) == nil || tx.Bucket([]byte("b")) == nil {
			t.Error("buckets not created")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenState(path, "test server", "1", 50*time.Millisecond); err == nil || !strings.Contains(err.Error(), "another test server") {
		t.Errorf("second open while held: %v", err)
	}
	db.Close()
	if _, err := OpenState(path, "test server", "2", time.Second); err == nil || !strings.Contains(err.Error(), `state version "1"`) {
		t.Errorf("open as version 2: %v", err)
	}
	db, err = OpenState(path, "test server", "1", time.Second)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	db.Close()
}
