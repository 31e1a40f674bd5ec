package access

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	ristretto "github.com/bwesterb/go-ristretto"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/elgamal"
	"github.com/veil-project/veil/internal/metal/oram"
	"github.com/veil-project/veil/internal/metal/twopc"
)

// State is one server's reactive state between accesses: everything except DataORAM's
// blocks. docs/formats/metal-access.md gives its encoding: Marshal is the header and the
// base map; the trees' shares are stored per node by the Store (EncodeNode).
type State struct {
	Role   twopc.Role
	P      Params
	Calls  uint64 // completed calls, accesses and account creations (both servers must agree)
	Evicts uint64 // IndexORAM evictions so far (fixes the next eviction paths)
	AC     ac.State
	Key    *elgamal.KeyShare // DataORAM key share
	PeerX  ristretto.Point   // the other server's public key share
	Pos    []bool            // base map share: Recursion().BaseEntries() entries of BaseBits
	Maps   []*oram.Share     // the position map's trees of records, T_1 .. T_L
	MapEv  []uint64          // their eviction counters
	Tree   *oram.Share       // IndexORAM's data-level tree T_0
}

const stateVersion = 3

// stateHeader: version, role, params, accesses, evicts, AC key and next shares, key share,
// peer's public share.
const stateHeader = 2 + ParamsLen + 8 + 8 + 16 + 8 + elgamal.KeyShareLen + elgamal.PointLen

// NewState draws a server's initial state: fresh key shares, a uniformly random base map
// share (so every block of the smallest tree starts on a uniformly random leaf; the larger
// trees' records are created on first access with random leaves), empty trees. PeerX is
// set by Setup.
func NewState(role twopc.Role, p Params, rnd io.Reader) (*State, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	a, err := ac.NewState(rnd)
	if err != nil {
		return nil, err
	}
	k, err := elgamal.NewKeyShare(rnd)
	if err != nil {
		return nil, err
	}
	tree, err := oram.NewShare(p.Layout())
	if err != nil {
		return nil, err
	}
	maps, err := oram.NewPosShares(p.Recursion())
	if err != nil {
		return nil, err
	}
	n := baseBits(p)
	buf := make([]byte, (n+7)/8)
	if _, err := io.ReadFull(rnd, buf); err != nil {
		return nil, err
	}
	return &State{Role: role, P: p, AC: a, Key: k, Pos: circuit.BytesToBits(buf)[:n], Maps: maps,
		MapEv: make([]uint64, len(maps)), Tree: tree}, nil
}

// baseBits is the size of the base map share.
func baseBits(p Params) int {
	r := p.Recursion()
	return r.BaseEntries() * r.BaseBits()
}

// Trees is the number of trees, L+1.
func (s *State) Trees() int { return len(s.Maps) + 1 }

// TreeShare is tree i's share: T_0 (IndexORAM's data-level tree) for i = 0, else T_i.
func (s *State) TreeShare(i int) *oram.Share {
	if i == 0 {
		return s.Tree
	}
	return s.Maps[i-1]
}

// packBits appends the slices' bits to b, LSB first, padded with zeros to a byte (what
// circuit.BitsToBytes does for the concatenation, without building it).
func packBits(b []byte, slices ...[]bool) []byte {
	var cur byte
	n := 0
	for _, sl := range slices {
		for _, v := range sl {
			if v {
				cur |= 1 << uint(n)
			}
			if n++; n == 8 {
				b, cur, n = append(b, cur), 0, 0
			}
		}
	}
	if n > 0 {
		b = append(b, cur)
	}
	return b
}

// unpackBits fills dst from p, the inverse of packBits for one slice; p must be exactly
// long enough and its padding bits zero.
func unpackBits(p []byte, dst []bool) error {
	if len(p) != (len(dst)+7)/8 {
		return fmt.Errorf("access: %d bytes for %d bits", len(p), len(dst))
	}
	for i := range dst {
		dst[i] = p[i>>3]>>uint(i&7)&1 == 1
	}
	if n := len(dst) % 8; n != 0 && p[len(p)-1]>>uint(n) != 0 {
		return fmt.Errorf("access: non-zero padding bits")
	}
	return nil
}

// EncodeNode is the stored form of node n (0: the stash) of tree i's share.
func (s *State) EncodeNode(i int, n uint64) []byte { return packBits(nil, s.TreeShare(i).Node(n)) }

// DecodeNode sets node n of tree i's share from its stored form.
func (s *State) DecodeNode(i int, n uint64, b []byte) error {
	if i < 0 || i >= s.Trees() {
		return fmt.Errorf("access: stored node of tree %d; the state has %d trees", i, s.Trees())
	}
	sh := s.TreeShare(i)
	if n >= uint64(len(sh.Buckets)) {
		return fmt.Errorf("access: stored node %d of tree %d out of range", n, i)
	}
	return unpackBits(b, sh.Node(n))
}

// Marshal encodes s.
func (s *State) Marshal() []byte {
	b := make([]byte, 0, stateHeader+8*len(s.MapEv)+(len(s.Pos)+7)/8)
	b = append(b, stateVersion, byte(s.Role))
	b = append(b, s.P.Encode()...)
	b = binary.LittleEndian.AppendUint64(b, s.Calls)
	b = binary.LittleEndian.AppendUint64(b, s.Evicts)
	b = append(append(b, s.AC.KeyShare[:]...), s.AC.NextShare[:]...)
	b = append(append(b, s.Key.Marshal()...), s.PeerX.Bytes()...)
	for _, e := range s.MapEv {
		b = binary.LittleEndian.AppendUint64(b, e)
	}
	return packBits(b, s.Pos)
}

// UnmarshalState is the inverse of Marshal: the trees come back empty (all-zero shares)
// for the Store to fill from their nodes.
func UnmarshalState(b []byte) (*State, error) {
	s, o, err := unmarshalHeader(b)
	if err != nil {
		return nil, err
	}
	p := s.P
	if s.Tree, err = oram.NewShare(p.Layout()); err != nil {
		return nil, err
	}
	if s.Maps, err = oram.NewPosShares(p.Recursion()); err != nil {
		return nil, err
	}
	if len(b)-o < 8*len(s.Maps) {
		return nil, fmt.Errorf("access: state truncated")
	}
	for range s.Maps {
		s.MapEv = append(s.MapEv, binary.LittleEndian.Uint64(b[o:]))
		o += 8
	}
	s.Pos = make([]bool, baseBits(p))
	if err := unpackBits(b[o:], s.Pos); err != nil {
		return nil, fmt.Errorf("access: state's base map: %w", err)
	}
	if !bytes.Equal(s.Marshal(), b) {
		return nil, fmt.Errorf("access: state encoding is not canonical")
	}
	return s, nil
}

// unmarshalHeader reads the fixed-size header of a Marshal'd state (no trees, no base
// map) and returns the offset of what follows it.
func unmarshalHeader(b []byte) (*State, int, error) {
	if len(b) > 0 && b[0] != stateVersion {
		return nil, 0, fmt.Errorf("access: state is version %d, this veil reads version %d (re-initialize both servers)", b[0], stateVersion)
	}
	if len(b) < stateHeader || (b[1] != 1 && b[1] != 2) {
		return nil, 0, fmt.Errorf("access: state is not a version-%d state", stateVersion)
	}
	p, err := DecodeParams(b[2 : 2+ParamsLen])
	if err != nil {
		return nil, 0, err
	}
	s := &State{Role: twopc.Role(b[1]), P: p}
	o := 2 + ParamsLen
	s.Calls = binary.LittleEndian.Uint64(b[o:])
	s.Evicts = binary.LittleEndian.Uint64(b[o+8:])
	o += 16
	copy(s.AC.KeyShare[:], b[o:o+16])
	copy(s.AC.NextShare[:], b[o+16:o+24])
	o += 24
	if s.Key, err = elgamal.UnmarshalKeyShare(b[o : o+elgamal.KeyShareLen]); err != nil {
		return nil, 0, err
	}
	o += elgamal.KeyShareLen
	var px [32]byte
	copy(px[:], b[o:o+32])
	if !s.PeerX.SetBytes(&px) {
		return nil, 0, fmt.Errorf("access: peer public key share is not a point")
	}
	return s, o + 32, nil
}
