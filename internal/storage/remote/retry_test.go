package remote_test

import (
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage/remote"
)

// dropFirst is a TCP proxy in front of the store that closes the first n connections at
// once, as a restarting service does.
func dropFirst(t *testing.T, target string, n int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var seen atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if seen.Add(1) <= n {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go io.Copy(s, c)
				io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// Idempotent requests survive a restart of the service (before: only uploads were
// retried, and a store restart during a put failed a third of one user's files on their
// list and create calls); a move is not repeated.
func TestIdempotentRequestsRetried(t *testing.T) {
	url, cred := serveStore(t)
	target := strings.TrimPrefix(url, "https://")
	for _, op := range []struct {
		name string
		run  func(*remote.Backend) error
	}{
		{"list", func(b *remote.Backend) error { _, err := b.List(t.Context(), ""); return err }},
		{"create", func(b *remote.Backend) error { return b.Create(t.Context(), "d/e") }},
		{"stat", func(b *remote.Backend) error { _, err := b.Stat(t.Context(), "", "d"); return err }},
		{"search", func(b *remote.Backend) error { _, err := b.Search(t.Context(), "", "e"); return err }},
		{"get", nil},
	} {
		b, err := remote.New("https://"+dropFirst(t, target, 2), cred)
		if err != nil {
			t.Fatal(err)
		}
		if op.run == nil { // get: the object put through a proxy that drops nothing
			clean, _ := remote.New("https://"+dropFirst(t, target, 0), cred)
			if err := clean.Put(t.Context(), "", "f", strings.NewReader("x"), 1); err != nil {
				t.Fatal(err)
			}
			clean.Close()
			rc, err := b.Get(t.Context(), "", "f")
			if err != nil {
				t.Fatalf("get across a restart: %v", err)
			}
			rc.Close()
			continue
		}
		if err := op.run(b); err != nil {
			t.Fatalf("%s across a restart: %v", op.name, err)
		}
		b.Close()
	}
	b, _ := remote.New("https://"+dropFirst(t, target, 1), cred)
	defer b.Close()
	if err := b.Move(t.Context(), "", "d", "", "d2"); err == nil {
		t.Fatal("a move through a dropped connection was repeated")
	}
}
