package access

import (
	"fmt"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Reply is what one server returns to the client for an access: its share of the verdict
// and its part of the two-party decryption of the fetched block (the dummy block of zeros
// for a write or a refusal). Both are the same size whatever the request was.
type Reply struct {
	Allowed bool
	Data    []byte
}

// CheckUserBlock validates the client's encrypted block (Server 1's part of a request)
// before the servers start an access on it.
func CheckUserBlock(p Params, user []byte) error {
	if len(user) != p.CTSize() {
		return fmt.Errorf("access: client block of %d bytes, want %d", len(user), p.CTSize())
	}
	_, err := dataoram.UnmarshalBlock(user)
	return err
}

// Access runs one ReadFile or WriteFile (the request decides, and neither server learns
// which) on this server's request share (ac.RequestLen bytes). user is Server 1's part of
// the request, the client's encrypted block (checked with CheckUserBlock); Server 2 passes
// nil. The state is committed before Access returns.
func (p *Party) Access(req, user []byte) (Reply, error) {
	pr := p.st.P
	if len(req) != ac.RequestLen {
		return Reply{}, fmt.Errorf("access: request share of %d bytes, want %d", len(req), ac.RequestLen)
	}
	if p.sess.Role() == twopc.Garbler {
		if err := CheckUserBlock(pr, user); err != nil {
			return Reply{}, err
		}
	}
	p.dirty = map[uint64][]byte{}
	t := newTimer()
	ev := p.idx.NextEvictionLeaves()
	reg := newRegion(pr, ev[0], ev[1])
	p.startAhead(reg, user)
	defer p.waitAhead()
	r := pr.Recursion()
	fresh, err := r.DrawFresh(p.rnd)
	if err != nil {
		return Reply{}, err
	}
	in := append(circuit.BytesToBits(p.st.AC.KeyShare[:]), circuit.BytesToBits(req)...)
	in = append(append(in, p.st.Pos...), fresh.Leaves[r.Levels()]...)
	out, err := p.sess.Run(p.front, in)
	if err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.Front)
	top := circuit.BitsToUint64(out[:r.BaseBits()])
	o := r.BaseBits()
	newPos := out[o : o+len(p.st.Pos)]
	o += len(p.st.Pos)
	id := out[o : o+pr.D+1]
	write, allowed := out[o+pr.D+1], out[o+pr.D+2]

	leaf, err := p.pos.Walk(top, id, fresh)
	if err != nil {
		return Reply{}, err
	}
	p.lastLeaf = leaf
	p.startPath(leaf)
	res, err := p.idx.AccessLeaf(leaf, fresh.Leaves[0], id, write, []bool{false})
	if err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.IndexORAM)
	if res.Evictions[0].Leaf != ev[0] || res.Evictions[1].Leaf != ev[1] {
		return Reply{}, fmt.Errorf("access: IndexORAM evicted paths %d, %d, not the expected %d, %d",
			res.Evictions[0].Leaf, res.Evictions[1].Leaf, ev[0], ev[1])
	}
	dotIdx, half, err := p.composeAndSplit(reg, res, write, allowed)
	if err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.Mid)
	fetched, toClient, err := p.fetch(dotIdx)
	if err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.Fetch)
	if err := p.permuteRegion(reg, half, fetched); err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.Permute)
	p.st.Pos = newPos
	p.st.Evicts = p.idx.Evictions()
	p.st.MapEv = p.pos.Evictions()
	p.st.Calls++
	if err := p.store.commitCall(p.st, p.dirty); err != nil {
		return Reply{}, err
	}
	t.mark(&p.last.Commit)
	return Reply{Allowed: allowed, Data: toClient}, nil
}

// LastLeaf is the IndexORAM path the last access revealed to both servers: all they learn
// of which file it was (uniformly random, fresh for every access of a file).
func (p *Party) LastLeaf() uint64 { return p.lastLeaf }
