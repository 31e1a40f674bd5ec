package ac

import (
	"crypto/rand"
	"net"
	"testing"

	"github.com/veil-project/veil/internal/metal/twopc"
)

func benchParties(b *testing.B) (*Party, *Party) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ch := make(chan *Party, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			b.Error(err)
			ch <- nil
			return
		}
		b.Cleanup(func() { c.Close() })
		s, err := twopc.NewSession(c, twopc.Evaluator, rand.Reader)
		if err != nil {
			b.Error(err)
			ch <- nil
			return
		}
		st, _ := NewState(rand.Reader)
		p, _ := NewParty(s, st, 10, rand.Reader)
		ch <- p
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	s, err := twopc.NewSession(c, twopc.Garbler, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	st, _ := NewState(rand.Reader)
	p1, _ := NewParty(s, st, 10, rand.Reader)
	p2 := <-ch
	if p2 == nil {
		b.FailNow()
	}
	return p1, p2
}

// BenchmarkCreateAccount: one CreateAccount (38,461 AND gates), both servers in this
// process over loopback TCP.
func BenchmarkCreateAccount(b *testing.B) {
	p1, p2 := benchParties(b)
	for i := 0; i < b.N; i++ {
		done := make(chan error)
		go func() { _, err := p2.CreateAccount(); done <- err }()
		if _, err := p1.CreateAccount(); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck: one capability check (38,762 AND gates), both servers in this process
// over loopback TCP.
func BenchmarkCheck(b *testing.B) {
	p1, p2 := benchParties(b)
	var c [CapabilityLen]byte
	s1, s2, _ := Request{c, 1, Read}.Split(rand.Reader)
	for i := 0; i < b.N; i++ {
		done := make(chan error)
		go func() { _, err := p2.Check(s2); done <- err }()
		if _, err := p1.Check(s1); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}
