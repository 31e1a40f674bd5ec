package access

import (
	"fmt"

	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/oram"
)

// permute is the distributed permutation of Section 5.5 on ciphertext blocks, in gather
// form (applying q to A gives B[j] = A[q[j]]): Server 1 passes arr already rerandomized,
// applies its half σ1 (a permutation of n) and sends the result; Server 2 applies its half
// σ2 (kept positions: the permutation's last ones are dropped), rerandomizes what it keeps
// with its precomputed rerandomizers and sends it back; Server 1 returns the kept blocks.
// Server 2 passes nil arr.
func (p *Party) permute(arr [][]byte, half []int, n, kept int) ([][]byte, error) {
	size := p.st.P.CTSize()
	if p.garbler() {
		if len(arr) != n || len(half) != n {
			return nil, fmt.Errorf("access: permuting %d blocks with a permutation of %d", len(arr), n)
		}
		msg := make([]byte, 0, n*size)
		for _, j := range half {
			msg = append(msg, arr[j]...)
		}
		if err := p.sess.SendMessage(msg); err != nil {
			return nil, err
		}
		back, err := p.sess.ReceiveMessage()
		if err != nil {
			return nil, err
		}
		return splitBlocks(back, kept, size)
	}
	msg, err := p.sess.ReceiveMessage()
	if err != nil {
		return nil, err
	}
	in, err := splitBlocks(msg, n, size)
	if err != nil {
		return nil, err
	}
	pairs, err := p.ahead.pairs.wait()
	if err != nil {
		return nil, err
	}
	c := p.st.P.Chunks()
	if len(half) != kept || len(pairs) != (kept+1)*c {
		return nil, fmt.Errorf("access: keeping %d blocks with a half of %d", kept, len(half))
	}
	out := make([]byte, kept*size)
	err = forEach(kept, func(j int) error {
		b, err := p.applyPairs(in[half[j]], pairs[(j+1)*c:(j+2)*c])
		copy(out[j*size:], b)
		return err
	})
	if err != nil {
		return nil, err
	}
	return nil, p.sess.SendMessage(out)
}

func splitBlocks(msg []byte, n, size int) ([][]byte, error) {
	if len(msg) != n*size {
		return nil, fmt.Errorf("access: permuted array of %d bytes, want %d blocks of %d", len(msg), n, size)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = msg[i*size : (i+1)*size]
	}
	return out, nil
}

// composeAndSplit runs the access's permutation circuit (permCircuit) on the IndexORAM
// outputs. It returns this server's share of the DOT index and its half of the access's
// permutation: σ1 for Server 1 (drawn here, uniformly), σ2 for Server 2 (from the Run).
func (p *Party) composeAndSplit(r region, res oram.AccessResult, write, allowed bool) ([]bool, []int, error) {
	c, ok := p.perms[r.shared]
	if !ok {
		var err error
		if c, err = permCircuit(p.st.P, r.shared); err != nil {
			return nil, nil, err
		}
		p.perms[r.shared] = c
	}
	n, wu := r.size(), r.posBits()
	var in []bool
	var p1 []int
	if p.garbler() {
		p1 = p.shuffle.Perm(n)
		q := make([]int, n)
		for j, v := range p1 {
			q[v] = j
		}
		for _, v := range q {
			in = append(in, circuit.Uint64ToBits(uint64(v), wu)...)
		}
	}
	in = append(append(in, res.From...), res.To...)
	in = append(in, res.Found, write, allowed)
	for _, ev := range res.Evictions {
		for _, x := range ev.Perm {
			in = append(in, x...)
		}
	}
	out, err := p.sess.Run(c, in)
	if err != nil {
		return nil, nil, err
	}
	iw := dataoram.IndexBits(p.st.P.Slots() + 1)
	if p.garbler() {
		return out[:iw], p1, nil
	}
	p2 := make([]int, r.kept())
	seen := make([]bool, n)
	for j := range p2 {
		v := circuit.BitsToUint64(out[iw+j*wu : iw+(j+1)*wu])
		if v >= uint64(n) || seen[v] {
			return nil, nil, fmt.Errorf("access: permutation half is not injective (entry %d)", v)
		}
		seen[v], p2[j] = true, int(v)
	}
	return out[:iw], p2, nil
}
