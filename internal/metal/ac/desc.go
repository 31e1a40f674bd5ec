package ac

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Perm is a set of permissions.
type Perm uint8

const (
	Read  Perm = 1 << 0
	Write Perm = 1 << 1
	Share Perm = 1 << 2 // may derive capabilities for others (Metal-SHARE, next issue)
)

const (
	descVersion   = 1
	DescLen       = 16
	CapabilityLen = 48 // nonce(16) || ciphertext(16) || tag(16)
	RequestLen    = CapabilityLen + 8 + 1
)

// Description is what a capability grants: perms on files First .. First+Count-1.
type Description struct {
	Perm  Perm
	First uint64
	Count uint32
}

// Encode lays out the one-block plaintext: version, perm, two zero bytes, count (uint32 LE),
// first (uint64 LE).
func (d Description) Encode() [DescLen]byte {
	var p [DescLen]byte
	p[0] = descVersion
	p[1] = byte(d.Perm)
	binary.LittleEndian.PutUint32(p[4:], d.Count)
	binary.LittleEndian.PutUint64(p[8:], d.First)
	return p
}

// DecodeDescription parses an Encode'd description.
func DecodeDescription(p []byte) (Description, error) {
	if len(p) != DescLen {
		return Description{}, fmt.Errorf("ac: description of %d bytes, want %d", len(p), DescLen)
	}
	if p[0] != descVersion || p[2] != 0 || p[3] != 0 || p[1]&^byte(Read|Write|Share) != 0 {
		return Description{}, fmt.Errorf("ac: bad description header %x", p[:4])
	}
	return Description{Perm: Perm(p[1]), Count: binary.LittleEndian.Uint32(p[4:]), First: binary.LittleEndian.Uint64(p[8:])}, nil
}

// Request is a client's access request in the clear: which capability, which file, which
// operation (Read or Write, exactly one).
type Request struct {
	Capability [CapabilityLen]byte
	File       uint64
	Op         Perm
}

// encode lays out capability || file (uint64 LE) || op byte: the RequestLen bytes that
// are XOR-shared between the servers.
func (r Request) encode() []byte {
	p := make([]byte, RequestLen)
	copy(p, r.Capability[:])
	binary.LittleEndian.PutUint64(p[CapabilityLen:], r.File)
	p[CapabilityLen+8] = byte(r.Op)
	return p
}

// Split returns fresh XOR shares of r for server 1 and server 2 (paper Section 3): each
// share alone is uniformly random.
func (r Request) Split(rnd io.Reader) (s1, s2 []byte, err error) {
	p := r.encode()
	s1 = make([]byte, RequestLen)
	if _, err := io.ReadFull(rnd, s1); err != nil {
		return nil, nil, err
	}
	s2 = make([]byte, RequestLen)
	for i := range p {
		s2[i] = p[i] ^ s1[i]
	}
	return s1, s2, nil
}

// Combine XORs two equal-length shares (a client reconstructing a server answer).
func Combine(a, b []byte) ([]byte, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("ac: shares of %d and %d bytes", len(a), len(b))
	}
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out, nil
}

// NewAccess checks the arguments of a ReadFile (op Read; data nil) or a WriteFile (op
// Write; data at most blockSize bytes) and returns its request in the clear and the block
// it carries: data zero-padded to blockSize, zeros for a read. Its errors name what was
// wrong without a package prefix: the access clients (access, primitive) add theirs.
func NewAccess(capability []byte, file uint64, op Perm, data []byte, blockSize int) (Request, []byte, error) {
	if len(capability) != CapabilityLen {
		return Request{}, nil, fmt.Errorf("capability of %d bytes, want %d", len(capability), CapabilityLen)
	}
	if len(data) > blockSize {
		return Request{}, nil, fmt.Errorf("%d bytes do not fit a block of %d", len(data), blockSize)
	}
	if op != Read && op != Write {
		return Request{}, nil, fmt.Errorf("operation must be read or write")
	}
	r := Request{File: file, Op: op}
	copy(r.Capability[:], capability)
	blk := make([]byte, blockSize)
	if op == Write {
		copy(blk, data)
	}
	return r, blk, nil
}
