package primitive

import (
	"fmt"
	"io"
	"time"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/oram"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Party runs Primitive Metal for one server over one twopc.Session. Both servers must make
// the same calls in the same order, each with its own shares. After any error the session
// is out of step: the deployment is lost (its state lives only in memory).
type Party struct {
	sess         *twopc.Session
	p            Params
	ac           *ac.Party
	pos          []bool // position map share: (Files+1) entries of D bits
	tree         *oram.Party
	front, reply *circuit.Circuit
	rnd          io.Reader
	lastLeaf     uint64
	last         Timings
}

// Timings is where this server's time went in its last access.
type Timings struct {
	Front time.Duration // Metal-AC check + position map (one Run)
	ORAM  time.Duration // the ORAM access with the data: read + two evictions (three Runs)
	Reply time.Duration // masking the answer (one Run)
}

// NewParty starts a server's empty deployment: a fresh Metal-AC key share, a uniformly
// random position map share (every file starts on a uniformly random leaf) and the empty
// tree. rnd supplies all of this party's randomness.
func NewParty(sess *twopc.Session, p Params, rnd io.Reader) (*Party, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	st, err := ac.NewState(rnd)
	if err != nil {
		return nil, err
	}
	pt := &Party{sess: sess, p: p, rnd: rnd}
	if pt.ac, err = ac.NewParty(sess, st, p.FilesPerAccount, rnd); err != nil {
		return nil, err
	}
	if pt.pos, err = pt.randomBits((int(p.Files()) + 1) * p.D); err != nil {
		return nil, err
	}
	sh, err := oram.NewShare(p.Layout())
	if err != nil {
		return nil, err
	}
	if pt.tree, err = oram.NewParty(sess, sh, rnd); err != nil {
		return nil, err
	}
	if pt.front, err = frontCircuit(p); err != nil {
		return nil, err
	}
	pt.reply, err = replyCircuit(p)
	return pt, err
}

// Params returns the deployment's parameters.
func (pt *Party) Params() Params { return pt.p }

// Share is this server's share of the tree (for tests and measurements).
func (pt *Party) Share() *oram.Share { return pt.tree.Share() }

// LastLeaf is the path the last access revealed to both servers.
func (pt *Party) LastLeaf() uint64 { return pt.lastLeaf }

// LastTimings is where the last access's time went.
func (pt *Party) LastTimings() Timings { return pt.last }

// CreateAccount grants a new account's capability (Metal-AC) and returns this server's
// shares, for the client, of the capability and of the account's first file id.
func (pt *Party) CreateAccount() (capShare, firstShare []byte, err error) {
	before := pt.ac.State().NextShare
	c, err := pt.ac.CreateAccount()
	if err != nil {
		return nil, nil, err
	}
	return c, before[:], nil
}

// Reply is one server's answer to an access: its share of the verdict and of the data
// (zeros unless the request was an allowed read). Both are the same size whatever the
// request was.
type Reply struct {
	Allowed bool
	Data    []byte
}

// Access runs one ReadFile or WriteFile (the request decides, and neither server learns
// which) on this server's part of a request (RequestLen bytes, from NewRequest).
func (pt *Party) Access(req []byte) (Reply, error) {
	p := pt.p
	if len(req) != p.RequestLen() {
		return Reply{}, fmt.Errorf("primitive: request part of %d bytes, want %d", len(req), p.RequestLen())
	}
	t0 := time.Now()
	nl, err := pt.randomBits(p.D)
	if err != nil {
		return Reply{}, err
	}
	key := pt.ac.State().KeyShare
	in := append(circuit.BytesToBits(key[:]), circuit.BytesToBits(req[:acRequestLen])...)
	in = append(append(in, pt.pos...), nl...)
	out, err := pt.sess.Run(pt.front, in)
	if err != nil {
		return Reply{}, err
	}
	leaf := circuit.BitsToUint64(out[:p.D])
	o := p.D
	newPos := out[o : o+len(pt.pos)]
	o += len(pt.pos)
	id := out[o : o+p.D+1]
	write, read, allowed := out[o+p.D+1], out[o+p.D+2], out[o+p.D+3]
	t1 := time.Now()

	res, err := pt.tree.AccessLeaf(leaf, nl, id, write, circuit.BytesToBits(req[acRequestLen:]))
	if err != nil {
		return Reply{}, err
	}
	t2 := time.Now()
	data, err := pt.sess.Run(pt.reply, append(append([]bool{}, res.Old...), read))
	if err != nil {
		return Reply{}, err
	}
	pt.pos, pt.lastLeaf = newPos, leaf
	pt.last = Timings{Front: t1.Sub(t0), ORAM: t2.Sub(t1), Reply: time.Since(t2)}
	return Reply{Allowed: allowed, Data: circuit.BitsToBytes(data)}, nil
}

func (pt *Party) randomBits(n int) ([]bool, error) {
	b := make([]byte, (n+7)/8)
	if _, err := io.ReadFull(pt.rnd, b); err != nil {
		return nil, err
	}
	return circuit.BytesToBits(b)[:n], nil
}
