package twopctest

import (
	"crypto/rand"
	"net"
	"testing"

	"github.com/veil-project/veil/internal/metal/twopc"
)

// Pair connects a garbler and an evaluator session over loopback TCP; the connections close
// when the test ends.
func Pair(t testing.TB) (g, e *twopc.Session) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan *twopc.Session, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			t.Error(err)
			ch <- nil
			return
		}
		t.Cleanup(func() { c.Close() })
		s, err := twopc.NewSession(c, twopc.Evaluator, rand.Reader)
		if err != nil {
			t.Error(err)
		}
		ch <- s
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, err = twopc.NewSession(c, twopc.Garbler, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if e = <-ch; e == nil {
		t.FailNow()
	}
	return g, e
}
