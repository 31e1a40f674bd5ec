package share

import (
	"fmt"
	"io"
	"math/big"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/paillier"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Party runs Metal-SHARE's computations for one server on a twopc.Session. Both servers
// must make the same calls in the same order, each with its own part of the request.
type Party struct {
	sess         *twopc.Session
	keys         *ServerKeys
	capKey       [16]byte
	rnd          io.Reader
	enroll, send *circuit.Circuit
	list         *circuit.Circuit
}

// NewParty prepares the circuits. capKey is this server's share of Metal-AC's capability
// key (the sender's capability is checked, and the receiver's granted, under it).
func NewParty(sess *twopc.Session, keys *ServerKeys, capKey [16]byte, rnd io.Reader) (*Party, error) {
	if int(sess.Role()) != keys.Role {
		return nil, fmt.Errorf("share: keys of server %d on a session of server %d", keys.Role, sess.Role())
	}
	e, err := enrollCircuit()
	if err != nil {
		return nil, err
	}
	s, err := sendCircuit()
	if err != nil {
		return nil, err
	}
	l, err := listCircuit()
	if err != nil {
		return nil, err
	}
	return &Party{sess: sess, keys: keys, capKey: capKey, rnd: rnd, enroll: e, send: s, list: l}, nil
}

// CheckList tells whether this server's share (ListRequestLen bytes) and the other's make
// an account capability: the credential of a broadcast-list download. Both servers learn
// the answer (and only it).
func (p *Party) CheckList(reqShare []byte) (bool, error) {
	if len(reqShare) != ListRequestLen {
		return false, fmt.Errorf("share: list request share of %d bytes, want %d", len(reqShare), ListRequestLen)
	}
	out, err := p.sess.Run(p.list, append(circuit.BytesToBits(p.capKey[:]), circuit.BytesToBits(reqShare)...))
	if err != nil {
		return false, err
	}
	return out[0], nil
}

func (p *Party) masterBits() []bool {
	in := circuit.BytesToBits(p.capKey[:])
	in = append(in, circuit.BytesToBits(p.keys.AMK[:])...)
	return append(in, circuit.BytesToBits(p.keys.BMK[:])...)
}

// Enroll runs UserKeyGen on this server's share of the client's account capability and
// returns this server's share of the reply (EnrollReplyLen bytes).
func (p *Party) Enroll(reqShare []byte) ([]byte, error) {
	if len(reqShare) != EnrollRequestLen {
		return nil, fmt.Errorf("share: enrol request share of %d bytes, want %d", len(reqShare), EnrollRequestLen)
	}
	out, err := p.sess.Run(p.enroll, append(p.masterBits(), circuit.BytesToBits(reqShare)...))
	if err != nil {
		return nil, err
	}
	return append([]byte{b2u(out[0])}, circuit.BitsToBytes(out[1:])...), nil
}

// SendPartLen is what the client sends each server for SendCapability: its XOR share of
// the request, then the server's own rerandomized anonym ciphertext.
const SendPartLen = SendRequestLen + paillier.CiphertextLen

// Send runs SendCapability on this server's part (SendPartLen bytes). It returns this
// server's share of the verdict (SendReplyLen bytes, for the client) and, on Server 1, the
// list entry to append (nil on Server 2). The anonym ciphertext is decrypted outside 2PC;
// one that is not a valid ciphertext, or decrypts out of range, enters as "not in range",
// which the circuit turns into a refusal like any other.
func (p *Party) Send(part []byte) (reply, entry []byte, err error) {
	if len(part) != SendPartLen {
		return nil, nil, fmt.Errorf("share: send part of %d bytes, want %d", len(part), SendPartLen)
	}
	tape := make([]byte, tapeBits/8)
	if _, err := io.ReadFull(p.rnd, tape); err != nil {
		return nil, nil, err
	}
	v, inRange := p.decryptShare(part[SendRequestLen:])
	in := append(p.masterBits(), circuit.BytesToBits(tape)...)
	in = append(in, circuit.BytesToBits(part[:SendRequestLen])...)
	in = append(in, wideBits(v)...)
	in = append(in, inRange)
	out, err := p.sess.Run(p.send, in)
	if err != nil {
		return nil, nil, err
	}
	if p.keys.Role == 1 {
		entry = circuit.BitsToBytes(out[:EntryLen*8])
	}
	return []byte{b2u(out[EntryLen*8])}, entry, nil
}

func (p *Party) decryptShare(ct []byte) (*big.Int, bool) {
	c, err := p.keys.SK.ParseCiphertext(ct)
	if err != nil {
		return new(big.Int), false
	}
	v, err := p.keys.SK.Decrypt(c)
	if err != nil || v.BitLen() > WideBits {
		return new(big.Int), false
	}
	return v, true
}

// wideBits is v (< 2^WideBits) as WideBits little-endian bits.
func wideBits(v *big.Int) []bool {
	out := make([]bool, WideBits)
	for i := range out {
		out[i] = v.Bit(i) == 1
	}
	return out
}

func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}
