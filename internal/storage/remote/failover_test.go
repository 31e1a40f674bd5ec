package remote_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storewire"
)

// A client given several endpoints reaches the live one past a refused connection and a
// node answering 503, for reads, creates and puts (a put is sent again after a refused
// connection, when none of its bytes left), however the turn starts.
func TestFailoverPastDeadAndUnavailableNodes(t *testing.T) {
	url, cred := serveStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "https://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	var busyHits atomic.Int64
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		busyHits.Add(1)
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"code":"` + storewire.CodeUnavailable + `","message":"busy"}`))
	}))
	defer busy.Close()
	b, err := remote.NewMulti([]string{dead, busy.URL, url}, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range 6 { // every starting point of the turn, twice
		name := string(rune('a' + i))
		if err := b.Create(t.Context(), "d"); err != nil {
			t.Fatalf("create (turn %d): %v", i, err)
		}
		data := bytes.Repeat([]byte{byte(i)}, 5000)
		err := b.Put(t.Context(), "d", name, bytes.NewReader(data), int64(len(data)))
		if errors.Is(err, storewire.ErrUnavailable) {
			continue // a put answered 503 may have sent bytes: it is the caller's to send again
		}
		if err != nil {
			t.Fatalf("put (turn %d): %v", i, err)
		}
		rc, err := b.Get(t.Context(), "d", name)
		if err != nil {
			t.Fatalf("get (turn %d): %v", i, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("get (turn %d): %v", i, err)
		}
	}
	if _, err := b.List(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	if busyHits.Load() == 0 {
		t.Fatal("the turn never reached the node answering 503")
	}
}

// A node that takes connections and never answers the TLS handshake (a stopped process:
// its kernel still completes the connect) holds a request 3 s, not 10, when there are
// other nodes: the request moves on to the live one within a deadline that the 10 s
// handshake timeout overran (found deploying two nodes), and the stopped node is then
// left out of the turn.
func TestFailoverPastStoppedNode(t *testing.T) {
	url, cred := serveStore(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			defer c.Close() // held open, never read: a handshake that never ends
		}
	}()
	b, err := remote.NewMulti([]string{"https://" + ln.Addr().String(), url}, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	for i := range 10 {
		if err := b.Create(ctx, "d"); err != nil {
			t.Fatalf("request %d with one node stopped: %v", i, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the stopped node took %d connections, want 1 (then left out)", n)
	}
}
