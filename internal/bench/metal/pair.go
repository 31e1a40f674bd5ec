package metalbench

import (
	"crypto/rand"
	"net"
	"sync/atomic"
	"time"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// countingConn counts the bytes read and written on Server 1's end of the link: all the
// traffic between the two servers.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// pacedConn caps the rate at which one end sends (bytes per second): a simulated link of
// that bandwidth, each direction on its own (the paper's servers were ~290 MB/s apart).
// Each write waits until the link has carried the previous ones.
type pacedConn struct {
	net.Conn
	rate float64
	next time.Time
}

func (c *pacedConn) Write(p []byte) (int, error) {
	start := time.Now()
	if c.next.After(start) {
		start = c.next
	}
	c.next = start.Add(time.Duration(float64(len(p)) / c.rate * float64(time.Second)))
	n, err := c.Conn.Write(p)
	time.Sleep(time.Until(c.next))
	return n, err
}

// pace wraps c in a pacedConn if rate > 0.
func pace(c net.Conn, rate float64) net.Conn {
	if rate <= 0 {
		return c
	}
	return &pacedConn{Conn: c, rate: rate}
}

// link is two 2PC sessions over a loopback TCP connection, Server 1's end counted.
type link struct {
	g, e   *twopc.Session
	bytes  atomic.Int64
	c1, c2 net.Conn
}

// newLink connects the sessions; rate > 0 caps each direction at rate bytes per second.
func newLink(rate float64) (*link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	l := &link{}
	type res struct {
		c   net.Conn
		s   *twopc.Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{err: err}
			return
		}
		s, err := twopc.NewSession(pace(c, rate), twopc.Evaluator, rand.Reader)
		ch <- res{c, s, err}
	}()
	if l.c1, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		return nil, err
	}
	l.g, err = twopc.NewSession(countingConn{pace(l.c1, rate), &l.bytes}, twopc.Garbler, rand.Reader)
	r := <-ch
	l.c2, l.e = r.c, r.s
	if err == nil {
		err = r.err
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

func (l *link) close() {
	for _, c := range []net.Conn{l.c1, l.c2} {
		if c != nil {
			c.Close()
		}
	}
}

// both runs f1 (Server 1) and f2 (Server 2) at once and returns the first error.
func both(f1, f2 func() error) error {
	ch := make(chan error, 1)
	go func() { ch <- f2() }()
	err1 := f1()
	err2 := <-ch
	if err1 != nil {
		return err1
	}
	return err2
}
