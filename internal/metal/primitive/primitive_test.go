package primitive

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"testing"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/circuit"
	"github.com/veil-project/veil/internal/metal/oram"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

// testParams keep 2PC small: 8 files of 16 bytes, stash 6, 3 files per account.
var testParams = Params{D: 3, Stash: 6, BlockSize: 16, FilesPerAccount: 3}

// rig is the two servers of one deployment over loopback TCP.
type rig struct {
	p      Params
	s1, s2 *Party
}

func newRig(t testing.TB, p Params) *rig {
	g, e := twopctest.Pair(t)
	r := &rig{p: p}
	var err1, err2 error
	both(func() { r.s1, err1 = NewParty(g, p, rand.Reader) }, func() { r.s2, err2 = NewParty(e, p, rand.Reader) })
	if err1 != nil || err2 != nil {
		t.Fatalf("new party: %v / %v", err1, err2)
	}
	return r
}

func both(f1, f2 func()) {
	done := make(chan struct{})
	go func() { f2(); close(done) }()
	f1()
	<-done
}

func (r *rig) createAccount(t testing.TB) (capability []byte, first uint64) {
	var c1, c2, f1, f2 []byte
	var err1, err2 error
	both(func() { c1, f1, err1 = r.s1.CreateAccount() }, func() { c2, f2, err2 = r.s2.CreateAccount() })
	if err1 != nil || err2 != nil {
		t.Fatalf("create account: %v / %v", err1, err2)
	}
	c, _ := ac.Combine(c1, c2)
	f, _ := ac.Combine(f1, f2)
	return c, binary.LittleEndian.Uint64(f)
}

func (r *rig) access(t testing.TB, capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error) {
	to1, to2, err := NewRequest(r.p, capability, file, op, data, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var rep1, rep2 Reply
	var err1, err2 error
	both(func() { rep1, err1 = r.s1.Access(to1) }, func() { rep2, err2 = r.s2.Access(to2) })
	if err1 != nil || err2 != nil {
		t.Fatalf("access: %v / %v", err1, err2)
	}
	if r.s1.LastLeaf() != r.s2.LastLeaf() {
		t.Fatalf("the servers revealed different leaves %d / %d", r.s1.LastLeaf(), r.s2.LastLeaf())
	}
	got, err := Finish(r.p, op, rep1, rep2)
	if raw, _ := ac.Combine(rep1.Data, rep2.Data); (op == ac.Write || errors.Is(err, ErrRefused)) && !bytes.Equal(raw, make([]byte, r.p.BlockSize)) {
		t.Fatalf("a write or a refusal was answered with data %x (must be zeros)", raw)
	}
	return got, err
}

func xorBits(a, b []bool) []bool {
	out := make([]bool, len(a))
	for i := range a {
		out[i] = a[i] != b[i]
	}
	return out
}

// posOf reconstructs the position map entry of id from both servers' shares.
func (r *rig) posOf(id uint64) uint64 {
	d := r.p.D
	return circuit.BitsToUint64(xorBits(r.s1.pos[int(id)*d:int(id+1)*d], r.s2.pos[int(id)*d:int(id+1)*d]))
}

// model is the reference: a map of file contents, and the plain Circuit ORAM tree driven
// with the same ids and leaves, whose values are indices into versions (the data a block
// must carry).
type model struct {
	files    map[uint64][]byte
	ref      *oram.Tree
	versions [][]byte
	pos      map[uint64]uint64
}

// Random reads and writes by two users, with refused requests mixed in, against a map;
// after every access the tree held as shares matches the reference tree slot for slot,
// data included.
func TestAccessMatchesMapAndReference(t *testing.T) {
	p := testParams
	r := newRig(t, p)
	capA, firstA := r.createAccount(t)
	capB, firstB := r.createAccount(t)
	if firstA != 0 || firstB != uint64(p.FilesPerAccount) {
		t.Fatalf("accounts' first files %d, %d", firstA, firstB)
	}
	ref, err := oram.NewTree(p.D, p.Stash)
	if err != nil {
		t.Fatal(err)
	}
	m := &model{files: map[uint64][]byte{}, ref: ref, versions: [][]byte{make([]byte, p.BlockSize)}, pos: map[uint64]uint64{}}
	rnd := mrand.New(mrand.NewPCG(3, 4))
	forged := append([]byte{}, capA...)
	forged[20] ^= 1
	refusals := 0
	for i := 0; i < 40; i++ {
		c, first := capA, firstA
		if rnd.IntN(2) == 1 {
			c, first = capB, firstB
		}
		file := first + rnd.Uint64N(uint64(p.FilesPerAccount))
		op := ac.Read
		var data []byte
		if rnd.IntN(2) == 0 {
			op = ac.Write
			data = make([]byte, 1+rnd.IntN(p.BlockSize))
			for j := range data {
				data[j] = byte(rnd.Uint32())
			}
		}
		wantRefused := false
		switch rnd.IntN(8) {
		case 0: // another user's file
			file = (file + uint64(p.FilesPerAccount)) % (2 * uint64(p.FilesPerAccount))
			wantRefused = true
		case 1:
			c, wantRefused = forged, true
		case 2: // outside the deployment
			file, wantRefused = p.Files()+rnd.Uint64N(5), true
		}
		got, err := r.access(t, c, file, op, data)
		id := file
		if wantRefused {
			refusals++
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("access %d (%v on %d): want a refusal, got %v", i, op, file, err)
			}
			id, op, data = p.Files(), ac.Read, nil
		} else if err != nil {
			t.Fatalf("access %d (%v on %d): %v", i, op, file, err)
		}
		m.check(t, r, i, id, op, data, got)
	}
	if refusals == 0 {
		t.Fatal("no refused request was tried")
	}
	deep := 0
	for n := uint64(1) << (p.D - 1); n < 1<<(p.D+1); n++ {
		for _, b := range ref.Bucket(n) {
			if b.Valid {
				deep++
			}
		}
	}
	if deep == 0 {
		t.Fatal("no block was evicted to the two deepest levels: the test exercises too little")
	}
	t.Logf("max stash %d, %d refusals", ref.MaxStash(), refusals)
}

// check replays one access on the model and compares.
func (m *model) check(t *testing.T, r *rig, i int, id uint64, op ac.Perm, data, got []byte) {
	t.Helper()
	p := r.p
	leaf, seen := m.pos[id]
	if seen && leaf != r.s1.LastLeaf() {
		t.Fatalf("access %d: revealed leaf %d, the file's position is %d", i, r.s1.LastLeaf(), leaf)
	}
	newLeaf := r.posOf(id)
	want := m.files[id]
	if want == nil {
		want = make([]byte, p.BlockSize)
	}
	if op == ac.Read && id < p.Files() && !bytes.Equal(got, want) {
		t.Fatalf("access %d: read %x of file %d, want %x", i, got, id, want)
	}
	if op == ac.Write {
		blk := make([]byte, p.BlockSize)
		copy(blk, data)
		m.files[id] = blk
		m.versions = append(m.versions, blk)
	}
	v := uint64(len(m.versions) - 1)
	if _, _, err := m.ref.Access(id, r.s1.LastLeaf(), newLeaf, func(o uint64) uint64 {
		if op == ac.Write {
			return v
		}
		return o
	}); err != nil {
		t.Fatal(err)
	}
	m.pos[id] = newLeaf
	m.sameTree(t, r, i)
}

// sameTree compares the tree held as shares with the reference, slot for slot: the valid
// bit, and for valid blocks the id, the leaf and the data.
func (m *model) sameTree(t *testing.T, r *rig, i int) {
	t.Helper()
	l := r.p.Layout()
	s1, s2 := r.s1.Share(), r.s2.Share()
	cmp := func(where string, a, b []bool, want []oram.Block) {
		got := xorBits(a, b)
		for j, w := range want {
			blk := got[j*l.BlockBits() : (j+1)*l.BlockBits()]
			meta := l
			meta.ValueBits = 0
			g := meta.DecodeBlock(blk[:meta.BlockBits()])
			data := circuit.BitsToBytes(blk[meta.BlockBits():])
			if g.Valid != w.Valid || (w.Valid && (g.ID != w.ID || g.Leaf != w.Leaf || !bytes.Equal(data, m.versions[w.Value]))) {
				t.Fatalf("access %d, %s slot %d: shares hold %+v data %x, reference %+v data %x", i, where, j, g, data, w, m.versions[w.Value])
			}
		}
	}
	cmp("stash", s1.Stash, s2.Stash, m.ref.StashBlocks())
	for n := 1; n < len(s1.Buckets); n++ {
		b := m.ref.Bucket(uint64(n))
		cmp("bucket", s1.Buckets[n], s2.Buckets[n], b[:])
	}
}

func TestBadInput(t *testing.T) {
	for _, p := range []Params{{D: 1, Stash: 6, BlockSize: 16, FilesPerAccount: 1}, {D: 3, Stash: 1, BlockSize: 16, FilesPerAccount: 1},
		{D: 3, Stash: 6, BlockSize: 0, FilesPerAccount: 1}, {D: 3, Stash: 6, BlockSize: 1 << 17, FilesPerAccount: 1}, {D: 3, Stash: 6, BlockSize: 16}} {
		if err := p.Check(); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
	p := testParams
	if _, _, err := NewRequest(p, make([]byte, ac.CapabilityLen), 0, ac.Read|ac.Write, nil, rand.Reader); err == nil {
		t.Error("a request for read and write at once was built")
	}
	if _, _, err := NewRequest(p, make([]byte, ac.CapabilityLen), 0, ac.Write, make([]byte, p.BlockSize+1), rand.Reader); err == nil {
		t.Error("a write larger than a block was built")
	}
	if _, err := Finish(p, ac.Read, Reply{Data: make([]byte, p.BlockSize)}, Reply{Data: nil}); err == nil {
		t.Error("a short reply was joined")
	}
	r := newRig(t, p)
	if _, err := r.s1.Access(make([]byte, p.RequestLen()-1)); err == nil {
		t.Error("a short request part was accepted")
	}
}
