package ac

import (
	"crypto/rand"
	"testing"

	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

// benchParties is one Party per server, over a twopctest.Pair session.
func benchParties(b *testing.B) (*Party, *Party) {
	g, e := twopctest.Pair(b)
	return benchParty(b, g), benchParty(b, e)
}

func benchParty(b *testing.B, s *twopc.Session) *Party {
	st, err := NewState(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	p, err := NewParty(s, st, 10, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	return p
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
