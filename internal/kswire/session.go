package kswire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// Sizes of the session fields.
const (
	SessionIDSize = 16
	MACKeySize    = 32
	MACSize       = sha256.Size
	grantSize     = 1 + SessionIDSize + MACKeySize + 8 + 2
	dgramHeader   = 1 + 1 + SessionIDSize + 8
	// DatagramOverhead is what a datagram adds around its body.
	DatagramOverhead = dgramHeader + MACSize
	// MinDatagram is the smallest max datagram a grant may name: room for one request
	// header and one byte.
	MinDatagram = DatagramOverhead + headerSize + 1
)

// Datagram types.
const (
	TypeRequest  byte = 1 // client -> server: body is a Request
	TypeResponse byte = 2 // server -> client: body is a Response
	TypeError    byte = 3 // server -> client: body is one error code byte
)

// Error codes carried by TypeError datagrams.
const (
	CodeRateLimited byte = 1 // the client's query budget is spent
	CodeUnknownKey  byte = 2 // the key id is not served
	CodeBadRequest  byte = 3 // the body did not parse or evaluate
	CodeRevoked     byte = 4 // the client's credential was revoked
	// CodeBatchTooLarge: more inputs than the server's MaxBatch (HTTPS answers 413); the
	// client sends fewer per request. Session 14; before, code 3.
	CodeBatchTooLarge byte = 5
)

// Grant is what opening a UDP session over HTTPS yields.
type Grant struct {
	ID          [SessionIDSize]byte
	MACKey      [MACKeySize]byte
	Expiry      time.Time // second precision
	MaxDatagram int       // the largest datagram the server reads
}

// AppendGrant appends g's encoding to b.
func AppendGrant(b []byte, g *Grant) []byte {
	b = append(b, Version)
	b = append(b, g.ID[:]...)
	b = append(b, g.MACKey[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(g.Expiry.Unix()))
	return binary.BigEndian.AppendUint16(b, uint16(g.MaxDatagram))
}

// ParseGrant decodes a grant.
func ParseGrant(b []byte) (*Grant, error) {
	if len(b) != grantSize {
		return nil, fmt.Errorf("%w: session grant is %d bytes, want %d", ErrMalformed, len(b), grantSize)
	}
	if b[0] != Version {
		return nil, fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], Version)
	}
	g := &Grant{}
	copy(g.ID[:], b[1:17])
	copy(g.MACKey[:], b[17:49])
	g.Expiry = time.Unix(int64(binary.BigEndian.Uint64(b[49:57])), 0)
	g.MaxDatagram = int(binary.BigEndian.Uint16(b[57:59]))
	if g.MaxDatagram < MinDatagram {
		return nil, fmt.Errorf("%w: max datagram of %d bytes", ErrMalformed, g.MaxDatagram)
	}
	return g, nil
}

// Datagram is one UDP packet of a session.
type Datagram struct {
	Type    byte
	Session [SessionIDSize]byte
	Seq     uint64
	Body    []byte
}

// AppendDatagram appends d's encoding, authenticated with key, to b.
func AppendDatagram(b []byte, d *Datagram, key *[MACKeySize]byte) []byte {
	start := len(b)
	b = append(b, Version, d.Type)
	b = append(b, d.Session[:]...)
	b = binary.BigEndian.AppendUint64(b, d.Seq)
	b = append(b, d.Body...)
	m := hmac.New(sha256.New, key[:])
	m.Write(b[start:])
	return m.Sum(b)
}

// PeekSession returns the session id of a datagram before its key is known, so the
// receiver can look the key up. The datagram is not authenticated yet.
func PeekSession(b []byte) ([SessionIDSize]byte, error) {
	var id [SessionIDSize]byte
	if len(b) < DatagramOverhead {
		return id, fmt.Errorf("%w: datagram of %d bytes, shorter than %d", ErrMalformed, len(b), DatagramOverhead)
	}
	if b[0] != Version {
		return id, fmt.Errorf("%w: version %d, want %d", ErrMalformed, b[0], Version)
	}
	copy(id[:], b[2:2+SessionIDSize])
	return id, nil
}

// ErrForged reports a datagram whose MAC does not verify.
var ErrForged = fmt.Errorf("%w: bad MAC", ErrMalformed)

// OpenDatagram checks b's MAC under key and decodes it. Body aliases b.
func OpenDatagram(b []byte, key *[MACKeySize]byte) (*Datagram, error) {
	id, err := PeekSession(b)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key[:])
	m.Write(b[:len(b)-MACSize])
	if !hmac.Equal(m.Sum(nil), b[len(b)-MACSize:]) {
		return nil, ErrForged
	}
	t := b[1]
	if t != TypeRequest && t != TypeResponse && t != TypeError {
		return nil, fmt.Errorf("%w: datagram type %d", ErrMalformed, t)
	}
	return &Datagram{Type: t, Session: id, Seq: binary.BigEndian.Uint64(b[18:26]),
		Body: b[dgramHeader : len(b)-MACSize]}, nil
}
