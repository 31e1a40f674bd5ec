package ac

import (
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// State is what one server keeps for Metal-AC between calls (and on disk): its share of the
// capability key and its share of the next free file id.
type State struct {
	KeyShare  [16]byte
	NextShare [8]byte
}

// NewState draws a fresh key share. Both servers start with next-file-id shares of zero
// (the value 0 is public); the first CreateAccount re-shares it.
func NewState(rnd io.Reader) (State, error) {
	var s State
	_, err := io.ReadFull(rnd, s.KeyShare[:])
	return s, err
}

// Party runs Metal-AC for one server. Both servers must make the same calls in the same
// order, each with its own shares.
type Party struct {
	sess         *twopc.Session
	st           State
	rnd          io.Reader
	grant, check *circuit.Circuit
}

// NewParty prepares the circuits (filesPerAccount file ids per account, the paper's
// l_file). rnd supplies nonce shares.
func NewParty(sess *twopc.Session, st State, filesPerAccount uint32, rnd io.Reader) (*Party, error) {
	if filesPerAccount == 0 {
		return nil, fmt.Errorf("ac: files per account must be at least 1")
	}
	g, err := grantCircuit(filesPerAccount)
	if err != nil {
		return nil, err
	}
	c, err := checkCircuit()
	if err != nil {
		return nil, err
	}
	return &Party{sess: sess, st: st, rnd: rnd, grant: g, check: c}, nil
}

// State returns the current state (to persist after every successful call).
func (p *Party) State() State { return p.st }

// CreateAccount reserves the next range of file ids and returns this server's share of the
// new account's capability (CapabilityLen bytes, for the client).
func (p *Party) CreateAccount() ([]byte, error) {
	var nonce [16]byte
	if _, err := io.ReadFull(p.rnd, nonce[:]); err != nil {
		return nil, err
	}
	in := append(circuit.BytesToBits(p.st.KeyShare[:]), circuit.BytesToBits(nonce[:])...)
	in = append(in, circuit.BytesToBits(p.st.NextShare[:])...)
	out, err := p.sess.Run(p.grant, in)
	if err != nil {
		return nil, err
	}
	capShare := circuit.BitsToBytes(out[:CapabilityLen*8])
	copy(p.st.NextShare[:], circuit.BitsToBytes(out[CapabilityLen*8:]))
	return capShare, nil
}

// Check runs the access check on this server's request share (RequestLen bytes, from the
// client) and returns this server's share of the allowed bit.
func (p *Party) Check(reqShare []byte) (bool, error) {
	if len(reqShare) != RequestLen {
		return false, fmt.Errorf("ac: request share of %d bytes, want %d", len(reqShare), RequestLen)
	}
	in := append(circuit.BytesToBits(p.st.KeyShare[:]), circuit.BytesToBits(reqShare)...)
	out, err := p.sess.Run(p.check, in)
	if err != nil {
		return false, err
	}
	return out[0], nil
}
