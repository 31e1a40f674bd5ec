package duplessbench

import (
	"net"
	"sync"
	"time"
)

// delayProxy forwards TCP connections from a loopback port to target, holding every byte
// for oneWay in each direction: a link with a round-trip time of 2*oneWay, so that the
// number of sequential round trips an operation makes shows in its time, as it would
// against a service across a network (loopback's own is ~0.05 ms).
type delayProxy struct {
	l      net.Listener
	target string
	oneWay time.Duration
	wg     sync.WaitGroup
}

func startDelayProxy(target string, oneWay time.Duration) (*delayProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &delayProxy{l: l, target: target, oneWay: oneWay}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *delayProxy) addr() string { return p.l.Addr().String() }

func (p *delayProxy) close() {
	p.l.Close()
	p.wg.Wait()
}

func (p *delayProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		var both sync.WaitGroup
		both.Add(2)
		go func() { defer both.Done(); p.pipe(c, t) }()
		go func() { defer both.Done(); p.pipe(t, c) }()
		go func() { both.Wait(); c.Close(); t.Close() }()
	}
}

// pipe copies from src to dst, each read delivered oneWay after it arrived, in order.
func (p *delayProxy) pipe(src, dst net.Conn) {
	type held struct {
		at time.Time
		b  []byte
	}
	q := make(chan held, 1024)
	go func() {
		defer close(q)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- held{time.Now().Add(p.oneWay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for h := range q {
		time.Sleep(time.Until(h.at))
		if _, err := dst.Write(h.b); err != nil {
			src.Close() // ends the reader: nothing more can be delivered
			break
		}
	}
	for range q {
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
}
