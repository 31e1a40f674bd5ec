package share

import (
	"crypto/rand"
	"path/filepath"
	"sync"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/paillier"
	"github.com/veil-project/veil/internal/metal/twopc/twopctest"
)

// rig is the two servers of a deployment as 2PC parties over loopback TCP: Metal-AC for
// accounts and checks, Metal-SHARE for enrolment and sending, and Server 1's list on a
// bbolt file.
type rig struct {
	t    testing.TB
	ac   [2]*ac.Party
	sh   [2]*Party
	keys [2]*ServerKeys
	list *List
	db   *bbolt.DB
}

var (
	keysOnce sync.Once
	rigKeys  [2]*ServerKeys
)

// serverKeys are generated once per test binary (two Paillier keys take a second or so).
func serverKeys(t testing.TB) [2]*ServerKeys {
	keysOnce.Do(func() {
		for i := range rigKeys {
			k, err := NewServerKeys(i+1, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			rigKeys[i] = k
		}
	})
	return rigKeys
}

func newRig(t testing.TB) *rig {
	r := &rig{t: t, keys: serverKeys(t)}
	g, e := twopctest.Pair(t)
	for i := range 2 {
		st, err := ac.NewState(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		sess := g
		if i == 1 {
			sess = e
		}
		if r.ac[i], err = ac.NewParty(sess, st, 4, rand.Reader); err != nil {
			t.Fatal(err)
		}
		if r.sh[i], err = NewParty(sess, r.keys[i], st.KeyShare, rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if r.db, err = bbolt.Open(filepath.Join(t.TempDir(), "list.db"), 0o600, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.db.Close() })
	if r.list, err = OpenList(r.db); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) pk(i int) *paillier.PublicKey { return &r.keys[i].SK.PublicKey }

// both runs f for each server at once and fails the test on any error.
func (r *rig) both(f func(i int) error) {
	r.t.Helper()
	var wg sync.WaitGroup
	var errs [2]error
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(i) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			r.t.Fatal(err)
		}
	}
}

// account creates an account and returns its capability and first file id.
func (r *rig) account() ([]byte, uint64) {
	var c, first [2][]byte
	r.both(func(i int) error {
		before := r.ac[i].State().NextShare
		first[i] = before[:]
		var err error
		c[i], err = r.ac[i].CreateAccount()
		return err
	})
	capability, _ := ac.Combine(c[0], c[1])
	f, _ := ac.Combine(first[0], first[1])
	var id uint64
	for j := 7; j >= 0; j-- {
		id = id<<8 | uint64(f[j])
	}
	return capability, id
}

func (r *rig) enroll(capability []byte) (UserKeys, error) {
	to1, to2, err := EnrollRequest(capability, rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	var out [2][]byte
	r.both(func(i int) error {
		var err error
		out[i], err = r.sh[i].Enroll([][]byte{to1, to2}[i])
		return err
	})
	return FinishEnroll(out[0], out[1])
}

// send runs SendCapability; the entry Server 1 gets is appended to the list and returned.
func (r *rig) send(req SendRequest) ([]byte, error) {
	to1, to2, err := req.Split(r.pk(0), r.pk(1), rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.sendParts(to1, to2)
}

func (r *rig) sendParts(to1, to2 []byte) ([]byte, error) {
	var out, entry [2][]byte
	r.both(func(i int) error {
		var err error
		out[i], entry[i], err = r.sh[i].Send([][]byte{to1, to2}[i])
		return err
	})
	if entry[1] != nil || len(entry[0]) != EntryLen {
		r.t.Fatalf("entries: server 1 got %d bytes, server 2 %d", len(entry[0]), len(entry[1]))
	}
	if err := r.list.Append(entry[0]); err != nil {
		r.t.Fatal(err)
	}
	return entry[0], FinishSend(out[0], out[1])
}

// allowed runs Metal-AC's access check.
func (r *rig) allowed(capability []byte, file uint64, op ac.Perm) bool {
	req := ac.Request{File: file, Op: op}
	copy(req.Capability[:], capability)
	s1, s2, err := req.Split(rand.Reader)
	if err != nil {
		r.t.Fatal(err)
	}
	var v [2]bool
	r.both(func(i int) error {
		var err error
		v[i], err = r.ac[i].Check([][]byte{s1, s2}[i])
		return err
	})
	return v[0] != v[1]
}

// receive downloads the list from epoch from and opens what k's broadcast key opens.
func (r *rig) receive(k UserKeys, from uint64) ([]Received, uint64) {
	b, err := r.list.Since(from)
	if err != nil {
		r.t.Fatal(err)
	}
	lr, err := ParseListReply(b)
	if err != nil {
		r.t.Fatal(err)
	}
	var got []Received
	for _, e := range lr.Entries {
		rc, ok, err := OpenEntry(k.BK, e)
		if err != nil {
			r.t.Fatal(err)
		}
		if ok {
			got = append(got, rc)
		}
	}
	return got, lr.Next
}
