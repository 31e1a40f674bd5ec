package access

import (
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/elgamal"
)

// The client's side of an access (docs/formats/metal-access.md).

// ErrRefused is the client's reading of a refusal: the capability does not grant the
// operation on the file (or the file id is outside the deployment).
var ErrRefused = errors.New("metal: access refused (no valid capability for this file and operation)")

// NewRequest builds the two servers' parts of a ReadFile (op ac.Read; data nil) or a
// WriteFile (op ac.Write; data at most BlockSize bytes, zero-padded). Server 1 gets its
// request share and an encryption of the block (of zeros for a read); Server 2 its share.
// Each part alone is independent of the capability, the file id and the op.
func NewRequest(p Params, pk elgamal.PublicKey, capability []byte, file uint64, op ac.Perm, data []byte, rnd io.Reader) (to1, to2 []byte, err error) {
	r, blk, err := ac.NewAccess(capability, file, op, data, p.BlockSize)
	if err != nil {
		return nil, nil, fmt.Errorf("metal: %w", err)
	}
	s1, s2, err := r.Split(rnd)
	if err != nil {
		return nil, nil, err
	}
	cts, err := pk.EncryptBlock(blk, rnd)
	if err != nil {
		return nil, nil, err
	}
	return append(s1, dataoram.MarshalBlock(cts)...), s2, nil
}

// SplitServer1Request separates Server 1's part into the request share and the block.
func SplitServer1Request(p Params, to1 []byte) (req, user []byte, err error) {
	if len(to1) != ac.RequestLen+p.CTSize() {
		return nil, nil, fmt.Errorf("metal: server 1 request of %d bytes, want %d", len(to1), ac.RequestLen+p.CTSize())
	}
	return to1[:ac.RequestLen], to1[ac.RequestLen:], nil
}

// Marshal encodes a reply: the verdict share byte, then the decryption message.
func (r Reply) Marshal() []byte {
	b := byte(0)
	if r.Allowed {
		b = 1
	}
	return append([]byte{b}, r.Data...)
}

// Finish combines the two servers' replies: the block's plaintext, or ErrRefused.
func Finish(p Params, r1, r2 []byte) ([]byte, error) {
	want := 1 + p.Chunks()*elgamal.PointLen
	if len(r1) != want || len(r2) != want || r1[0] > 1 || r2[0] > 1 {
		return nil, fmt.Errorf("metal: replies of %d and %d bytes, want %d", len(r1), len(r2), want)
	}
	data, err := dataoram.DecryptClient(r1[1:], r2[1:])
	if r1[0] == r2[0] {
		return nil, ErrRefused
	}
	if err != nil {
		return nil, fmt.Errorf("metal: the servers' replies do not decrypt (a server altered DataORAM?): %w", err)
	}
	return data, nil
}
