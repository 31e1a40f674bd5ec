package twopc

import (
	"crypto/rand"
	"net"
	"testing"

	"github.com/veil-project/veil/internal/metal/circuit"
)

// pair returns a garbler and an evaluator session connected over real loopback TCP.
func pair(t testing.TB) (*Session, *Session) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		s   *Session
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- res{nil, err}
			return
		}
		t.Cleanup(func() { c.Close() })
		s, err := NewSession(c, Evaluator, rand.Reader)
		ch <- res{s, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, err := NewSession(c, Garbler, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return g, r.s
}

// both runs c on the two sessions concurrently (the garbler in a goroutine).
func both(g, e *Session, c *circuit.Circuit, in1, in2 []bool) (o1, o2 []bool, err1, err2 error) {
	done := make(chan struct{})
	go func() {
		o1, err1 = g.Run(c, in1)
		close(done)
	}()
	o2, err2 = e.Run(c, in2)
	<-done
	return
}
