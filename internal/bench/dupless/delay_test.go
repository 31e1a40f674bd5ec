package duplessbench

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"
	"time"
)

// The proxy delivers every byte, in order, both ways, no sooner than its one-way delay
// each way (a lower bound: it holds each read until then), and passes a close on.
func TestDelayProxy(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // echo until the client closes its side
		c, err := l.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c)
		c.(*net.TCPConn).CloseWrite()
	}()
	const oneWay = 20 * time.Millisecond
	p, err := startDelayProxy(l.Addr().String(), oneWay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := make([]byte, 300<<10)
	rand.Read(msg)
	start := time.Now()
	go func() {
		c.Write(msg)
		c.(*net.TCPConn).CloseWrite()
	}()
	got, err := io.ReadAll(c) // ends at the echo's close, passed on by the proxy
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("echo through the proxy: %d of %d bytes, equal %v, %v", len(got), len(msg), bytes.Equal(got, msg), err)
	}
	if d := time.Since(start); d < 2*oneWay {
		t.Fatalf("round trip in %v, under the link's %v", d, 2*oneWay)
	}
}
