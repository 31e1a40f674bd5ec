package access

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"

	ristretto "github.com/bwesterb/go-ristretto"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/dataoram"
	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/oram"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// Init creates a server's state in store if it has none, and returns the stored state.
func Init(store *Store, role twopc.Role, p Params, rnd io.Reader) (*State, error) {
	st, err := store.LoadState()
	if err != nil || st != nil {
		return st, err
	}
	if st, err = NewState(role, p, rnd); err != nil {
		return nil, err
	}
	st.PeerX.SetZero()
	return st, store.Commit(st, nil)
}

// Party runs Metal calls for one server over one twopc.Session. Both servers must make the
// same calls in the same order. After any error the session is out of step: close it and
// open a new Party (which reloads the last committed state from the Store).
type Party struct {
	sess     *twopc.Session
	st       *State
	store    *Store
	rnd      io.Reader
	pk       elgamal.PublicKey
	ac       *ac.Party
	idx      *oram.Party
	pos      *oram.PosParty
	dot      *dataoram.DOT
	shuffle  *rand.Rand               // Server 1's σ1 of each access's permutation
	perms    map[int]*circuit.Circuit // permCircuit by the eviction paths' shared levels
	front    *circuit.Circuit
	dirty    map[uint64][]byte // Server 1: DataORAM blocks changed by this access
	ahead    aheadWork         // this access's DataORAM work started beside the Runs
	lastLeaf uint64
	// RolledBack: at session start this server was one call ahead of the other (which had
	// crashed before committing it) and undid that call, so both hold the same state.
	RolledBack bool
	last       Timings
}

// NewParty loads the committed state (rnd must be safe for concurrent use, e.g.
// crypto/rand.Reader: the rerandomizations run on all CPUs), exchanges parameters, access counters and public key
// shares with the other server (adopting its share on first contact), and builds the
// circuits.
func NewParty(sess *twopc.Session, store *Store, rnd io.Reader) (*Party, error) {
	st, err := store.LoadState()
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("access: server state not initialized")
	}
	if st.Role != sess.Role() {
		return nil, fmt.Errorf("access: state is for server %d, session for server %d", st.Role, sess.Role())
	}
	p := &Party{sess: sess, st: st, store: store, rnd: rnd}
	if err := p.handshake(); err != nil {
		return nil, err
	}
	return p, p.build()
}

func (p *Party) handshake() error {
	hello := append(p.st.P.Encode(), p.st.Key.X.Bytes()...)
	hello = binary.LittleEndian.AppendUint64(hello, p.st.Calls)
	var peer []byte
	var err error
	if p.sess.Role() == twopc.Garbler {
		if err = p.sess.SendMessage(hello); err == nil {
			peer, err = p.sess.ReceiveMessage()
		}
	} else if peer, err = p.sess.ReceiveMessage(); err == nil {
		err = p.sess.SendMessage(hello)
	}
	if err != nil {
		return err
	}
	if len(peer) != len(hello) || !bytes.Equal(peer[:ParamsLen], hello[:ParamsLen]) {
		return errors.New("access: the other server runs different parameters")
	}
	mine, theirs := p.st.Calls, binary.LittleEndian.Uint64(peer[ParamsLen+32:])
	switch {
	case mine == theirs+1: // the other server crashed before committing the last call
		if err := p.store.Rollback(); err != nil {
			return fmt.Errorf("access: this server is one call ahead and cannot undo it: %w", err)
		}
		st, err := p.store.LoadState()
		if err != nil {
			return err
		}
		if st.Calls != theirs {
			return errors.New("access: the undone state does not match the other server's")
		}
		p.st, p.RolledBack = st, true
	case theirs == mine+1: // it undoes its last call (above, on its side)
	case mine != theirs:
		return fmt.Errorf("access: the servers' call counters differ (%d here, %d there): one lost its state", mine, theirs)
	}
	var x [32]byte
	copy(x[:], peer[ParamsLen:])
	var px ristretto.Point
	if !px.SetBytes(&x) {
		return errors.New("access: the other server's key share is not a point")
	}
	var zero ristretto.Point
	zero.SetZero()
	switch {
	case p.st.PeerX.Equals(&zero):
		p.st.PeerX = px
		if err := p.store.Commit(p.st, nil); err != nil {
			return err
		}
	case !p.st.PeerX.Equals(&px):
		return errors.New("access: the other server's key share changed (re-initialized?)")
	}
	return nil
}

func (p *Party) build() error {
	var err error
	pr := p.st.P
	x1, x2 := &p.st.Key.X, &p.st.PeerX
	p.pk = elgamal.JoinPublic(x1, x2)
	if p.ac, err = ac.NewParty(p.sess, p.st.AC, pr.FilesPerAccount, p.rnd); err != nil {
		return err
	}
	if p.idx, err = oram.NewParty(p.sess, p.st.Tree, p.rnd); err != nil {
		return err
	}
	p.idx.SetEvictions(p.st.Evicts)
	if p.pos, err = oram.NewPosParty(p.sess, pr.Recursion(), p.st.Maps, p.st.MapEv); err != nil {
		return err
	}
	if p.dot, err = dataoram.NewDOT(p.sess, pr.Slots()+1, p.rnd); err != nil {
		return err
	}
	var seed [32]byte
	if _, err := io.ReadFull(p.rnd, seed[:]); err != nil {
		return err
	}
	p.shuffle, p.perms = rand.New(rand.NewChaCha8(seed)), map[int]*circuit.Circuit{}
	if p.front, err = frontCircuit(pr); err != nil {
		return err
	}
	// The permutation circuit depends on how much the eviction paths overlap: build the
	// one the next access needs now (the overlap is the same for every access while the
	// eviction counter stays even), any other when an access first needs it.
	ev := p.idx.NextEvictionLeaves()
	r := newRegion(pr, ev[0], ev[1])
	p.perms[r.shared], err = permCircuit(pr, r.shared)
	return err
}

// PublicKey is the DataORAM public key the clients encrypt new blocks under.
func (p *Party) PublicKey() elgamal.PublicKey { return p.pk }

// Params returns the deployment's parameters.
func (p *Party) Params() Params { return p.st.P }

// CapabilityKeyShare is this server's share of Metal-AC's capability key (fixed at init):
// Metal-SHARE checks and grants capabilities under it.
func (p *Party) CapabilityKeyShare() [16]byte { return p.st.AC.KeyShare }

// Calls is the number of completed calls (accesses and account creations).
func (p *Party) Calls() uint64 { return p.st.Calls }

// CreateAccount grants a new account's capability (Metal-AC) and returns this server's
// shares, for the client, of the capability and of the account's first file id (the
// next-id state before the call; the account holds FilesPerAccount ids from there).
func (p *Party) CreateAccount() (capShare, firstShare []byte, err error) {
	before := p.ac.State().NextShare
	c, err := p.ac.CreateAccount()
	if err != nil {
		return nil, nil, err
	}
	p.st.AC = p.ac.State()
	p.st.Calls++
	return c, before[:], p.store.commitCall(p.st, nil)
}
