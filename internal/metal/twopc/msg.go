package twopc

import (
	"encoding/binary"
	"fmt"
	"io"
)

// MaxMessage bounds a message sent with SendMessage (64 MiB: a path of 64 KiB blocks as
// ElGamal ciphertexts with SS-DOT's wrapping).
const MaxMessage = 64 << 20

// SendMessage sends p to the peer on the session's stream, between Runs: version, 'M',
// length (uint32 LE), bytes. Metal's protocols outside the circuits (SS-DOT, the
// distributed permutation, decryption shares) travel this way on the same connection.
func (s *Session) SendMessage(p []byte) error {
	if len(p) > MaxMessage {
		return fmt.Errorf("twopc: message of %d bytes exceeds %d", len(p), MaxMessage)
	}
	var h [6]byte
	h[0], h[1] = version, 'M'
	binary.LittleEndian.PutUint32(h[2:], uint32(len(p)))
	if _, err := s.rw.Write(h[:]); err != nil {
		return err
	}
	if _, err := s.rw.Write(p); err != nil {
		return err
	}
	return s.rw.Flush()
}

// ReceiveMessage reads one message sent with SendMessage.
func (s *Session) ReceiveMessage() ([]byte, error) {
	var h [6]byte
	if _, err := io.ReadFull(s.rw, h[:]); err != nil {
		return nil, fmt.Errorf("twopc: reading message header: %w", err)
	}
	if h[0] != version || h[1] != 'M' {
		return nil, fmt.Errorf("twopc: expected a message, got type %q version %d", h[1], h[0])
	}
	n := binary.LittleEndian.Uint32(h[2:])
	if n > MaxMessage {
		return nil, fmt.Errorf("twopc: message of %d bytes exceeds %d", n, MaxMessage)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(s.rw, p); err != nil {
		return nil, fmt.Errorf("twopc: reading message: %w", err)
	}
	return p, nil
}
