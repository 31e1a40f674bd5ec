package twopc

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"io"
)

// Role is a party's part in the protocol: party 1 garbles, party 2 evaluates.
type Role uint8

const (
	Garbler   Role = 1 // party 1 (Metal's Server 1)
	Evaluator Role = 2 // party 2 (Metal's Server 2)
)

const (
	version  = 1
	bufSize  = 1 << 20
	magicLen = 4
)

var magic = [magicLen]byte{'V', 'M', '2', 'P'}

// Stats counts a session's work.
type Stats struct {
	Runs     uint64
	ANDGates uint64
	OTs      uint64 // correlated OTs produced by extension (party 2's input bits)
}

// Session is one party's end of a long-lived two-party computation over a reliable,
// ordered, already-authenticated byte stream (Metal runs it over mutual TLS between the
// servers). Setup runs the 128 base OTs once; every Run then costs only OT extension and
// garbled tables. A Session is not safe for concurrent use: calls are serialized, and the
// two parties must call Run with the same circuits in the same order.
type Session struct {
	role   Role
	rw     *bufio.ReadWriter
	h      *hasher
	delta  Label         // garbler only: the free-XOR offset, also the IKNP correlation
	prg    cipher.Stream // garbler only: input-label randomness
	cotS   *cotSender
	cotR   *cotReceiver
	tweak  uint64
	labels []Label
	stats  Stats
}

// NewSession performs the hello and the base OTs over conn. rnd supplies all of this
// party's randomness (Delta, PRG seeds); use crypto/rand.Reader outside tests. The base OTs
// themselves draw from crypto/rand inside circl.
func NewSession(conn io.ReadWriter, role Role, rnd io.Reader) (*Session, error) {
	if role != Garbler && role != Evaluator {
		return nil, fmt.Errorf("twopc: role %d (want 1 or 2)", role)
	}
	s := &Session{
		role: role,
		rw:   bufio.NewReadWriter(bufio.NewReaderSize(conn, bufSize), bufio.NewWriterSize(conn, bufSize)),
		h:    newHasher(),
	}
	hello := append(magic[:], version, byte(role))
	if _, err := s.rw.Write(hello); err != nil {
		return nil, err
	}
	if err := s.rw.Flush(); err != nil {
		return nil, err
	}
	var peer [magicLen + 2]byte
	if _, err := io.ReadFull(s.rw, peer[:]); err != nil {
		return nil, fmt.Errorf("twopc: reading hello: %w", err)
	}
	if !bytes.Equal(peer[:magicLen], magic[:]) || peer[magicLen] != version {
		return nil, fmt.Errorf("twopc: peer speaks %q version %d, want %q version %d", peer[:magicLen], peer[magicLen], magic[:], version)
	}
	if Role(peer[magicLen+1]) != 3-role {
		return nil, fmt.Errorf("twopc: peer is party %d, want party %d", peer[magicLen+1], 3-role)
	}
	var err error
	if role == Garbler {
		var seed [32]byte
		if _, err := io.ReadFull(rnd, seed[:]); err != nil {
			return nil, err
		}
		s.delta = getLabel(seed[:16])
		s.delta.L |= 1 // colour bit of Delta must be 1 (point-and-permute)
		blk, _ := aes.NewCipher(seed[16:])
		s.prg = cipher.NewCTR(blk, make([]byte, 16))
		s.cotS, err = baseOTReceive(s.rw, s.delta)
	} else {
		s.cotR, err = baseOTSend(s.rw, rnd)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Role is this party's role.
func (s *Session) Role() Role { return s.role }

// Stats returns the work done so far.
func (s *Session) Stats() Stats { return s.stats }

// header is what each party sends at the start of a Run: both must agree on all of it.
type header struct {
	run, tweak uint64
	digest     [32]byte
}

const headerLen = 2 + 8 + 8 + 32

func (h header) encode() []byte {
	p := make([]byte, headerLen)
	p[0], p[1] = version, 'R'
	binary.LittleEndian.PutUint64(p[2:], h.run)
	binary.LittleEndian.PutUint64(p[10:], h.tweak)
	copy(p[18:], h.digest[:])
	return p
}

// decodeHeader parses a run header from the peer.
func decodeHeader(p []byte) (header, error) {
	if len(p) != headerLen {
		return header{}, fmt.Errorf("twopc: run header of %d bytes, want %d", len(p), headerLen)
	}
	if p[0] != version || p[1] != 'R' {
		return header{}, fmt.Errorf("twopc: bad run header (version %d, type %q)", p[0], p[1])
	}
	h := header{run: binary.LittleEndian.Uint64(p[2:]), tweak: binary.LittleEndian.Uint64(p[10:])}
	copy(h.digest[:], p[18:])
	return h, nil
}

// exchangeHeaders sends this party's run header, then reads and checks the peer's. Both
// headers go out before either is checked, so a mismatch fails both sides.
func (s *Session) exchangeHeaders(mine header) error {
	if _, err := s.rw.Write(mine.encode()); err != nil {
		return err
	}
	if err := s.rw.Flush(); err != nil {
		return err
	}
	var p [headerLen]byte
	if _, err := io.ReadFull(s.rw, p[:]); err != nil {
		return fmt.Errorf("twopc: reading run header: %w", err)
	}
	peer, err := decodeHeader(p[:])
	if err != nil {
		return err
	}
	if peer.run != mine.run || peer.tweak != mine.tweak {
		return fmt.Errorf("twopc: out of step: peer at run %d, we are at run %d", peer.run, mine.run)
	}
	if peer.digest != mine.digest {
		return fmt.Errorf("twopc: peer runs circuit %x, we run %x", peer.digest[:8], mine.digest[:8])
	}
	return nil
}
