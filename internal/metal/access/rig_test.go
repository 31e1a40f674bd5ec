package access

import (
	"crypto/rand"
	"encoding/binary"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/twopc"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

// testParams keep 2PC small: 8 files of 32 bytes, stash 6, and a position map of two
// trees of records (depths 2 and 1, records of 2 leaves) over a base map of 3 entries, so
// every access walks the whole recursion.
var testParams = Params{D: 3, Stash: 6, BlockSize: 32, FilesPerAccount: 3, Pack: 1, Base: 1}

// flatParams are testParams with the position map a single linear scan (no trees).
var flatParams = Params{D: 3, Stash: 6, BlockSize: 32, FilesPerAccount: 3, Pack: 3, Base: 10}

// rig is the two servers of one deployment, each with its own bbolt file, over loopback
// TCP. seen1 and seen2 record every request part each server received.
type rig struct {
	p            Params
	dir          string
	st1, st2     *Store
	s1, s2       *Party
	seen1, seen2 [][]byte
	next         uint64 // the next account's first file id
}

func openStore(t testing.TB, path string) *Store {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st, err := NewStore(db)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newRig(t testing.TB, p Params) *rig {
	r := &rig{p: p, dir: t.TempDir()}
	r.st1 = openStore(t, filepath.Join(r.dir, "s1.db"))
	r.st2 = openStore(t, filepath.Join(r.dir, "s2.db"))
	if _, err := Init(r.st1, twopc.Garbler, p, rand.Reader); err != nil {
		t.Fatal(err)
	}
	if _, err := Init(r.st2, twopc.Evaluator, p, rand.Reader); err != nil {
		t.Fatal(err)
	}
	r.connect(t)
	return r
}

// connect opens a new session and new Parties from the committed state (as after a
// restart).
func (r *rig) connect(t testing.TB) {
	g, e := twopctest.Pair(t)
	var err1, err2 error
	both(func() { r.s1, err1 = NewParty(g, r.st1, rand.Reader) }, func() { r.s2, err2 = NewParty(e, r.st2, rand.Reader) })
	if err1 != nil || err2 != nil {
		t.Fatalf("new party: %v / %v", err1, err2)
	}
}

func both(f1, f2 func()) {
	done := make(chan struct{})
	go func() { f2(); close(done) }()
	f1()
	<-done
}

func (r *rig) createAccount(t testing.TB) []byte {
	var c1, c2, f1, f2 []byte
	var err1, err2 error
	both(func() { c1, f1, err1 = r.s1.CreateAccount() }, func() { c2, f2, err2 = r.s2.CreateAccount() })
	if err1 != nil || err2 != nil {
		t.Fatalf("create account: %v / %v", err1, err2)
	}
	c, err := ac.Combine(c1, c2)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := ac.Combine(f1, f2)
	if got := binary.LittleEndian.Uint64(first); got != r.next {
		t.Fatalf("account's first file id %d, want %d", got, r.next)
	}
	r.next += uint64(r.p.FilesPerAccount)
	return c
}

// access runs one request through both servers and returns what the client gets.
func (r *rig) access(t testing.TB, capability []byte, file uint64, op ac.Perm, data []byte) ([]byte, error) {
	to1, to2, err := NewRequest(r.p, r.s1.PublicKey(), capability, file, op, data, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r.seen1, r.seen2 = append(r.seen1, to1), append(r.seen2, to2)
	req1, user, err := SplitServer1Request(r.p, to1)
	if err != nil {
		t.Fatal(err)
	}
	var rep1, rep2 Reply
	var err1, err2 error
	both(func() { rep1, err1 = r.s1.Access(req1, user) }, func() { rep2, err2 = r.s2.Access(to2, nil) })
	if err1 != nil || err2 != nil {
		t.Fatalf("access: %v / %v", err1, err2)
	}
	if r.s1.LastLeaf() != r.s2.LastLeaf() {
		t.Fatalf("the servers revealed different leaves %d / %d", r.s1.LastLeaf(), r.s2.LastLeaf())
	}
	return Finish(r.p, rep1.Marshal(), rep2.Marshal())
}
