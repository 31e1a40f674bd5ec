package remote

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storewire"
)

// A service that takes the connection and never answers (a stopped process) fails the
// request after answerTimeout (and its retries), instead of hanging the command forever.
// Found by review: the client had no response timeout, and the CLI's contexts no deadline.
func TestListDoesNotHangOnSilentService(t *testing.T) {
	defer func(d time.Duration) { answerTimeout = d }(answerTimeout)
	answerTimeout = 300 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(io.Discard, c)
		}
	}()
	b, err := New("http://"+ln.Addr().String(), storewire.Credential{User: "alice", Secret: "eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHg"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := b.List(context.Background(), ""); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a list answered by no one succeeded")
		}
		t.Logf("list: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("list still waiting after 20 s for a service that never answers")
	}
}
