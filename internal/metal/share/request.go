package share

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/eax"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/paillier"
)

// ErrRefused is a 2PC verdict of "no": the capability does not allow it (or the
// permission asked is invalid). Whether the anonym is authentic is not part of the
// verdict: that would be an oracle on its owner's secret (sendCircuit).
var ErrRefused = errors.New("refused by the servers: the capability does not allow sharing this file")

// xorSplit returns fresh XOR shares of p.
func xorSplit(p []byte, rnd io.Reader) (s1, s2 []byte, err error) {
	s1 = make([]byte, len(p))
	if _, err := io.ReadFull(rnd, s1); err != nil {
		return nil, nil, err
	}
	s2 = make([]byte, len(p))
	for i := range p {
		s2[i] = p[i] ^ s1[i]
	}
	return s1, s2, nil
}

// EnrollRequest XOR-shares the account capability for the two servers.
func EnrollRequest(capability []byte, rnd io.Reader) (to1, to2 []byte, err error) {
	if len(capability) != ac.CapabilityLen {
		return nil, nil, fmt.Errorf("share: capability of %d bytes, want %d", len(capability), ac.CapabilityLen)
	}
	return xorSplit(capability, rnd)
}

// ListRequest XOR-shares a list download's credential, an account capability, for the two
// servers (as EnrollRequest: the same capability, checked by listCircuit).
func ListRequest(capability []byte, rnd io.Reader) (to1, to2 []byte, err error) {
	return EnrollRequest(capability, rnd)
}

// FinishEnroll combines the servers' reply shares.
func FinishEnroll(r1, r2 []byte) (UserKeys, error) {
	r, err := ac.Combine(r1, r2)
	if err != nil || len(r) != EnrollReplyLen {
		return UserKeys{}, errors.New("share: enrol replies of the wrong size")
	}
	if r[0] != 1 {
		if r[0] != 0 {
			return UserKeys{}, errors.New("share: enrol reply is malformed")
		}
		return UserKeys{}, errors.New("refused by the servers: enrolment needs an account capability (one made by 'veil metal account create')")
	}
	k := UserKeys{ID: binary.LittleEndian.Uint64(r[1:9])}
	copy(k.AK[:], r[9:25])
	copy(k.BK[:], r[25:41])
	return k, nil
}

// SendRequest is a SendCapability request in the clear.
type SendRequest struct {
	Capability []byte // the sender's account capability (carries Share and covers File)
	File       uint64
	Perm       ac.Perm // ac.Read, ac.Write or both
	To         Anonym
}

// Split rerandomizes the anonym and returns each server's part (SendPartLen bytes): the
// XOR share of (capability, file, perm), then that server's anonym ciphertext.
func (r SendRequest) Split(pk1, pk2 *paillier.PublicKey, rnd io.Reader) (to1, to2 []byte, err error) {
	if len(r.Capability) != ac.CapabilityLen {
		return nil, nil, fmt.Errorf("share: capability of %d bytes, want %d", len(r.Capability), ac.CapabilityLen)
	}
	if r.Perm == 0 || r.Perm&^(ac.Read|ac.Write) != 0 {
		return nil, nil, errors.New("share: the permission to grant is read, write or both")
	}
	a, err := r.To.Rerandomize(pk1, pk2, rnd)
	if err != nil {
		return nil, nil, err
	}
	p := append(append([]byte{}, r.Capability...), binary.LittleEndian.AppendUint64(nil, r.File)...)
	p = append(p, byte(r.Perm))
	if to1, to2, err = xorSplit(p, rnd); err != nil {
		return nil, nil, err
	}
	return append(to1, paillier.CiphertextBytes(a.C1)...), append(to2, paillier.CiphertextBytes(a.C2)...), nil
}

// FinishSend combines the servers' verdict shares.
func FinishSend(r1, r2 []byte) error {
	if len(r1) != SendReplyLen || len(r2) != SendReplyLen || (r1[0]^r2[0])&^1 != 0 {
		return errors.New("share: send replies of the wrong size")
	}
	if r1[0]^r2[0] != 1 {
		return ErrRefused
	}
	return nil
}

// Received is a capability found in the broadcast list.
type Received struct {
	Capability []byte // ac.CapabilityLen bytes
	File       uint64
	Perm       ac.Perm
	Index      uint32 // the receiver's anonym it was sent to
}

// Opener tries list entries under one broadcast key (the AEAD set up once for a whole
// download).
type Opener struct{ aead cipher.AEAD }

// NewOpener prepares the trial decryptions under bk.
func NewOpener(bk [16]byte) (*Opener, error) {
	blk, _ := aes.NewCipher(bk[:])
	aead, err := eax.NewEAX(blk)
	if err != nil {
		return nil, err
	}
	return &Opener{aead: aead}, nil
}

// OpenEntry tries one entry with a fresh Opener (see Opener.Open).
func OpenEntry(bk [16]byte, entry []byte) (Received, bool, error) {
	o, err := NewOpener(bk)
	if err != nil {
		return Received{}, false, err
	}
	return o.Open(entry)
}

// Open tries to decrypt one list entry; ok is false for an entry addressed to someone else
// (or refused: under a random key). Entries that open but carry a malformed payload are an
// error (only the servers could have made them).
func (o *Opener) Open(entry []byte) (Received, bool, error) {
	if len(entry) != EntryLen {
		return Received{}, false, fmt.Errorf("share: entry of %d bytes, want %d", len(entry), EntryLen)
	}
	p, err := o.aead.Open(nil, entry[:16], entry[16:], nil)
	if err != nil {
		return Received{}, false, nil
	}
	if p[0] != entryVersion || p[2] != 0 || p[3] != 0 || p[1] == 0 || p[1]&^byte(ac.Read|ac.Write) != 0 {
		return Received{}, false, errors.New("share: an entry for this user has a malformed payload")
	}
	return Received{Capability: append([]byte(nil), p[8:56]...), File: binary.LittleEndian.Uint64(p[56:64]),
		Perm: ac.Perm(p[1]), Index: binary.LittleEndian.Uint32(p[4:8])}, true, nil
}
