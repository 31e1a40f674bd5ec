package remote_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage/remote"
)

// countingListener counts the connections a server accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// TestLargeListKeepsConnection: a listing too large for the service's answer buffer
// comes chunked; the client reads it to its end, so the next request reuses the
// connection (it used to close it, and every later request of a put paid a new TCP and
// TLS handshake).
func TestLargeListKeepsConnection(t *testing.T) {
	var cl *countingListener
	url, cred := serveStoreOn(t, func(ln net.Listener) net.Listener {
		cl = &countingListener{Listener: ln}
		return cl
	})
	b, err := remote.New(url, cred)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	for i := 0; i < 300; i++ { // tens of KiB of listing: a chunked answer
		if err := b.Put(ctx, "d", fmt.Sprintf("%s-%03d", strings.Repeat("n", 40), i), strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	before := cl.n.Load()
	for i := 0; i < 5; i++ {
		es, err := b.List(ctx, "d")
		if err != nil || len(es) != 300 {
			t.Fatalf("list: %d entries, %v", len(es), err)
		}
	}
	if got := cl.n.Load() - before; got != 0 {
		t.Errorf("5 lists of a large directory opened %d new connections, want 0 (the first one kept)", got)
	}
}
