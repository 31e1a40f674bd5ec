package twopc

import (
	"bytes"
	"crypto/rand"
	"testing"
)

func FuzzDecodeHeader(f *testing.F) {
	f.Add(header{run: 3, tweak: 99}.encode())
	f.Add([]byte{1, 'R'})
	f.Add(make([]byte, headerLen))
	f.Fuzz(func(t *testing.T, p []byte) {
		h, err := decodeHeader(p)
		if err != nil {
			return
		}
		if !bytes.Equal(h.encode(), p) {
			t.Fatalf("decode/encode changed %x", p)
		}
	})
}

// FuzzHello: whatever a peer sends during setup, NewSession returns (an error, or a session
// if the script happens to be a well-formed hello and base-OT transcript) without panicking
// or hanging: the fuzz input is all the peer ever says.
func FuzzHello(f *testing.F) {
	f.Add([]byte("VM2P\x01\x01"))
	f.Add([]byte("VM2P\x02\x02"))
	f.Add([]byte("XXXX"))
	f.Fuzz(func(t *testing.T, p []byte) {
		conn := &scripted{in: bytes.NewReader(p)}
		s, err := NewSession(conn, Evaluator, rand.Reader)
		if err == nil && len(p) < magicLen+2+kappa*elemLen {
			t.Fatalf("session set up from %d bytes of peer script", len(p))
		}
		_ = s
	})
}

// scripted is a peer that says a fixed script and swallows everything written to it.
type scripted struct{ in *bytes.Reader }

func (s *scripted) Read(p []byte) (int, error)  { return s.in.Read(p) }
func (s *scripted) Write(p []byte) (int, error) { return len(p), nil }
