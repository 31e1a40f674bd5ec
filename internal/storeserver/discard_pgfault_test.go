package storeserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/testutil"
)

// cutProxy forwards TCP connections to a PostgreSQL server; once armed, it cuts the
// client's side of the connection right after forwarding a chunk that holds marker, so
// the server runs the statement and the client never hears its answer.
type cutProxy struct {
	ln     net.Listener
	to     string
	marker []byte
	armed  atomic.Bool
	cut    atomic.Int64
	ran    chan struct{} // closed once the server answered the statement cut off
	wg     sync.WaitGroup
}

func startCutProxy(t *testing.T, to string, marker string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, to: to, marker: []byte(marker), ran: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.serve(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(c net.Conn) {
	defer p.wg.Done()
	s, err := net.Dial("tcp", p.to)
	if err != nil {
		c.Close()
		return
	}
	done := make(chan struct{})
	go func() { // the server's answers: read to their end even once the client is cut
		io.Copy(c, s)
		c.Close()
		close(done)
	}()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := s.Write(buf[:n]); werr != nil {
				break
			}
			if bytes.Contains(buf[:n], p.marker) && p.armed.CompareAndSwap(true, false) {
				p.cut.Add(1)
				c.Close() // the statement reached the server; its answer will not reach the client
				select {  // let the server run it before it sees the connection end
				case <-done:
					close(p.ran)
				case <-time.After(5 * time.Second):
				}
				break
			}
		}
		if err != nil {
			break
		}
	}
	s.Close()
	<-done
}

// A refused upload's discard on PostgreSQL whose statement ran but whose answer was lost
// (the connection cut after it was sent) must not release its pin again: the statement
// already dropped it, and a second drop takes another upload's pin, so gc may collect
// the content under that upload (whose transaction then fails: no record as pinned).
// Found by review: discard released the pin on any error.
func TestPGDiscardAnswerLostKeepsOtherPin(t *testing.T) {
	dsn := testutil.SharedPostgres(t).NewSchema(t)
	s := newServiceOn(t, dsn, Config{})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := startCutProxy(t, u.Host, "deleting = (pins = 1")
	u.Host = p.ln.Addr().String()
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol") // the statement's text and arguments in one message
	u.RawQuery = q.Encode()
	m, err := openPGMeta(t.Context(), u.String(), time.Minute, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.close() })

	h := sha256.Sum256([]byte("content two uploads hold"))
	mine, err := m.hold(t.Context(), h, 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.meta.hold(t.Context(), h, 100<<10) // another node's upload of the same content
	if err != nil {
		t.Fatal(err)
	}
	defer other.release()
	p.armed.Store(true)
	err = m.discard(context.Background(), h, mine, s.blobs)
	if p.cut.Load() != 1 || err == nil {
		t.Fatalf("the discard's connection was not cut (%d cuts): %v", p.cut.Load(), err)
	}
	t.Logf("discard with its answer lost: %v", err)
	select {
	case <-p.ran:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never answered the statement cut off")
	}
	var pins int64
	pool := s.meta.(*pgMeta).pool
	if err := pool.QueryRow(t.Context(), `SELECT pins FROM veil_blobs WHERE hash = $1`, h[:]).Scan(&pins); err != nil {
		t.Fatal(err)
	}
	if pins != 1 {
		t.Fatalf("pins after a discard whose answer was lost: %d, want 1 (the other upload's)", pins)
	}
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	var deleting bool
	if err := pool.QueryRow(t.Context(), `SELECT deleting FROM veil_blobs WHERE hash = $1`, h[:]).Scan(&deleting); err != nil || deleting {
		t.Fatalf("gc took the content the other upload holds (its row: deleting %v, %v)", deleting, err)
	}
}
