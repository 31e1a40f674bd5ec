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
// blocks. docs/formats/metal-access.md gives its encoding.
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

const stateVersion = 2

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

func (s *State) trees() []*oram.Share { return append(append([]*oram.Share{}, s.Maps...), s.Tree) }

// shareSlices lists the state's bit slices in encoding order: the base map, then each
// tree's stash and buckets (T_1 .. T_L, then T_0).
func (s *State) shareSlices() [][]bool {
	out := [][]bool{s.Pos}
	for _, t := range s.trees() {
		out = append(out, t.Stash)
		out = append(out, t.Buckets[1:]...)
	}
	return out
}

// packBits appends the slices' bits to b, LSB first, padded with zeros to a byte (what
// circuit.BitsToBytes does for the concatenation, without building it: the trees are
// large).
func packBits(b []byte, slices [][]bool) []byte {
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

// unpackBits fills the slices from p, the inverse of packBits.
func unpackBits(p []byte, slices [][]bool) {
	i := 0
	for _, sl := range slices {
		for k := range sl {
			sl[k] = p[i>>3]>>uint(i&7)&1 == 1
			i++
		}
	}
}

// Marshal encodes s.
func (s *State) Marshal() []byte {
	bits := 0
	for _, sl := range s.shareSlices() {
		bits += len(sl)
	}
	b := make([]byte, 0, stateHeader+8*len(s.MapEv)+(bits+7)/8)
	b = append(b, stateVersion, byte(s.Role))
	b = append(b, s.P.Encode()...)
	b = binary.LittleEndian.AppendUint64(b, s.Calls)
	b = binary.LittleEndian.AppendUint64(b, s.Evicts)
	b = append(append(b, s.AC.KeyShare[:]...), s.AC.NextShare[:]...)
	b = append(append(b, s.Key.Marshal()...), s.PeerX.Bytes()...)
	for _, e := range s.MapEv {
		b = binary.LittleEndian.AppendUint64(b, e)
	}
	return packBits(b, s.shareSlices())
}

// UnmarshalState is the inverse of Marshal.
func UnmarshalState(b []byte) (*State, error) {
	if len(b) > 0 && b[0] != stateVersion {
		return nil, fmt.Errorf("access: state is version %d, this veil reads version %d (re-initialize both servers)", b[0], stateVersion)
	}
	if len(b) < stateHeader || (b[1] != 1 && b[1] != 2) {
		return nil, fmt.Errorf("access: state is not a version-%d state", stateVersion)
	}
	p, err := DecodeParams(b[2 : 2+ParamsLen])
	if err != nil {
		return nil, err
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
		return nil, err
	}
	o += elgamal.KeyShareLen
	var px [32]byte
	copy(px[:], b[o:o+32])
	if !s.PeerX.SetBytes(&px) {
		return nil, fmt.Errorf("access: peer public key share is not a point")
	}
	o += 32
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
	n := baseBits(p)
	total := n
	for _, t := range s.trees() {
		total += len(t.Stash) + (len(t.Buckets)-1)*len(t.Buckets[1])
	}
	if len(b)-o != (total+7)/8 {
		return nil, fmt.Errorf("access: state body of %d bytes, want %d", len(b)-o, (total+7)/8)
	}
	s.Pos = make([]bool, n)
	unpackBits(b[o:], s.shareSlices())
	if !bytes.Equal(s.Marshal(), b) {
		return nil, fmt.Errorf("access: state encoding is not canonical")
	}
	return s, nil
}
