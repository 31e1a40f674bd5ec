package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ReclaimAfter is how long a keep-alive connection must have been idle (between two
// requests) before a Limiter at its cap closes it to make room: a client reusing its
// connection for the next request does so well within it.
const ReclaimAfter = time.Second

// Limiter is a listener that holds at most max connections open at once, as
// golang.org/x/net/netutil.LimitListener does, but a keep-alive connection idle between
// requests does not keep a new one out: when all are taken, Accept closes the connection
// idle longest (at least ReclaimAfter) and takes the new one in its place. A server's idle
// timeout (two minutes, say) would otherwise let connections that finished their requests
// keep every slot and honest clients waiting. Connections busy with a request, or not yet
// through their first one, are never closed by it; nor are hijacked ones (they count until
// closed). Set the http.Server's ConnState to the Limiter's (Limit does).
type Limiter struct {
	net.Listener
	max    int
	mu     sync.Mutex
	n      int                    // connections open
	idle   map[net.Conn]time.Time // keep-alive connections between requests, since when
	wake   chan struct{}          // a slot freed or a connection turned idle
	closed chan struct{}
	once   sync.Once
}

// Limit wraps ln for srv: at most max connections at once (max <= 0: no limit), idle ones
// closed to make room.
func Limit(srv *http.Server, ln net.Listener, max int) *Limiter {
	l := &Limiter{Listener: ln, max: max, idle: map[net.Conn]time.Time{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		l.ConnState(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	return l
}

// ConnState tracks which connections are idle (an http.Server's ConnState hook).
func (l *Limiter) ConnState(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	if st == http.StateIdle {
		l.idle[c] = time.Now()
	} else {
		delete(l.idle, c)
	}
	l.mu.Unlock()
	if st == http.StateIdle {
		l.signal()
	}
}

func (l *Limiter) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Accept waits for a free slot (closing an idle connection for one if all are taken) and
// accepts a connection.
func (l *Limiter) Accept() (net.Conn, error) {
	if err := l.acquire(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		l.release()
		return nil, err
	}
	return &limitConn{Conn: c, release: sync.OnceFunc(l.release)}, nil
}

func (l *Limiter) acquire() error {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		l.mu.Lock()
		if l.max <= 0 || l.n < l.max {
			l.n++
			l.mu.Unlock()
			return nil
		}
		var old net.Conn
		var since time.Time
		for c, at := range l.idle {
			if old == nil || at.Before(since) {
				old, since = c, at
			}
		}
		wait := time.Hour
		if old != nil {
			if wait = ReclaimAfter - time.Since(since); wait <= 0 {
				delete(l.idle, old)
			}
		}
		l.mu.Unlock()
		if old != nil && wait <= 0 {
			old.Close() // its slot is released as it closes
			continue
		}
		t.Reset(wait)
		select {
		case <-l.wake:
		case <-t.C:
		case <-l.closed:
			return net.ErrClosed
		}
	}
}

func (l *Limiter) release() {
	l.mu.Lock()
	l.n--
	l.mu.Unlock()
	l.signal()
}

// Close closes the listener; a waiting Accept returns.
func (l *Limiter) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitConn struct {
	net.Conn
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
