package primitive

import (
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/metal/ac"
)

// ErrRefused is the client's reading of a refusal: the capability does not grant the
// operation on the file (or the file id is outside the deployment).
var ErrRefused = errors.New("primitive: access refused (no valid capability for this file and operation)")

// NewRequest builds the two servers' parts of a ReadFile (op ac.Read; data nil) or a
// WriteFile (op ac.Write; data at most BlockSize bytes, zero-padded): each is an XOR share
// of the Metal-AC request followed by an XOR share of the block (zeros for a read), so
// each part alone is uniformly random.
func NewRequest(p Params, capability []byte, file uint64, op ac.Perm, data []byte, rnd io.Reader) (to1, to2 []byte, err error) {
	r, blk, err := ac.NewAccess(capability, file, op, data, p.BlockSize)
	if err != nil {
		return nil, nil, fmt.Errorf("primitive: %w", err)
	}
	s1, s2, err := r.Split(rnd)
	if err != nil {
		return nil, nil, err
	}
	d1 := make([]byte, p.BlockSize)
	if _, err := io.ReadFull(rnd, d1); err != nil {
		return nil, nil, err
	}
	d2, _ := ac.Combine(blk, d1)
	return append(s1, d1...), append(s2, d2...), nil
}

// Finish joins the two servers' replies: the block for an allowed read, nil for an allowed
// write, ErrRefused for a refusal.
func Finish(p Params, op ac.Perm, r1, r2 Reply) ([]byte, error) {
	if len(r1.Data) != p.BlockSize || len(r2.Data) != p.BlockSize {
		return nil, fmt.Errorf("primitive: replies of %d and %d bytes, want %d", len(r1.Data), len(r2.Data), p.BlockSize)
	}
	if r1.Allowed == r2.Allowed {
		return nil, ErrRefused
	}
	if op == ac.Write {
		return nil, nil
	}
	return ac.Combine(r1.Data, r2.Data)
}
