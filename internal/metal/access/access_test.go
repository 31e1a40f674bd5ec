package access

import (
	"bytes"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"strings"
	"testing"

	ristretto "github.com/bwesterb/go-ristretto"
	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/ac"
	"github.com/veil-project/veil/internal/metal/dataoram"
)

// Random reads and writes by two users against a plain map, with refused requests mixed
// in (a user touching the other's files, writes of longer-than-block data rejected at the
// client), and a restart of both parties from their bbolt state halfway: with two trees of
// records in the position map, and with the position map one linear scan.
func TestAccessMatchesMap(t *testing.T) {
	t.Run("recursive", func(t *testing.T) { accessMatchesMap(t, testParams) })
	t.Run("flat", func(t *testing.T) { accessMatchesMap(t, flatParams) })
}

func accessMatchesMap(t *testing.T, p Params) {
	r := newRig(t, p)
	caps := [][]byte{r.createAccount(t), r.createAccount(t)} // files 0-2 and 3-5
	want := map[uint64][]byte{}
	rng := mrand.New(mrand.NewPCG(1, 2))
	for i := 0; i < 24; i++ {
		if i == 12 {
			r.connect(t)
		}
		u := rng.IntN(2)
		file := uint64(3*u + rng.IntN(3))
		refused := rng.IntN(6) == 0
		if refused {
			file = uint64(3*(1-u) + rng.IntN(3))
		}
		if rng.IntN(2) == 0 {
			data := make([]byte, 1+rng.IntN(r.p.BlockSize))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
			_, err := r.access(t, caps[u], file, ac.Write, data)
			if refused {
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("op %d: write to a foreign file: %v, want refusal", i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("op %d: write: %v", i, err)
			}
			want[file] = append(data, make([]byte, r.p.BlockSize-len(data))...)
			continue
		}
		got, err := r.access(t, caps[u], file, ac.Read, nil)
		if refused {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("op %d: read of a foreign file: %v, want refusal", i, err)
			}
			continue
		}
		exp := want[file]
		if exp == nil {
			exp = make([]byte, r.p.BlockSize)
		}
		if err != nil || !bytes.Equal(got, exp) {
			t.Fatalf("op %d: read file %d: %x, %v; want %x", i, file, got, err, exp)
		}
	}
	if r.s1.Calls() != 26 || r.s2.Calls() != 26 {
		t.Fatalf("calls %d / %d, want 26", r.s1.Calls(), r.s2.Calls())
	}
}

// A forged or altered capability is refused and its write has no effect.
func TestAlteredCapabilityRefused(t *testing.T) {
	r := newRig(t, testParams)
	c := r.createAccount(t)
	if _, err := r.access(t, c, 1, ac.Write, []byte("original")); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte{}, c...)
	bad[20] ^= 1
	if _, err := r.access(t, bad, 1, ac.Write, []byte("forged")); !errors.Is(err, ErrRefused) {
		t.Fatalf("altered capability write: %v, want refusal", err)
	}
	if _, err := r.access(t, bad, 1, ac.Read, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("altered capability read: %v, want refusal", err)
	}
	got, err := r.access(t, c, 1, ac.Read, nil)
	if err != nil || !bytes.HasPrefix(got, []byte("original")) {
		t.Fatalf("after refused write: %q, %v", got, err)
	}
}

// What each server receives never carries the file id: the file field of its request share
// differs on every request for the same file, and the one thing revealed, the leaf, is
// fresh per access (the same file accessed 16 times is not seen on one path).
func TestServersSeeNoFileID(t *testing.T) {
	r := newRig(t, testParams)
	c := r.createAccount(t)
	leaves := map[uint64]bool{}
	for i := 0; i < 16; i++ {
		op := ac.Read
		if i%2 == 0 {
			op = ac.Write
		}
		if _, err := r.access(t, c, 2, op, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		leaves[r.s1.LastLeaf()] = true
	}
	if len(leaves) < 2 {
		t.Fatalf("16 accesses of one file all revealed leaf %v", leaves)
	}
	for s, seen := range [][][]byte{r.seen1, r.seen2} {
		ids := map[uint64]bool{}
		for _, m := range seen {
			ids[binary.LittleEndian.Uint64(m[ac.CapabilityLen:])] = true
		}
		if len(ids) != len(seen) {
			t.Fatalf("server %d saw a repeated file-id share over %d requests", s+1, len(seen))
		}
	}
}

// A Server 1 that alters its DataORAM ciphertexts (here: adds a valid point to every C, as
// an attacker who wants a wrong plaintext would) is detected at the client: the result
// does not decode. The servers themselves run on normally.
func TestAlteredDataORAMDetectedAtClient(t *testing.T) {
	r := newRig(t, testParams)
	c := r.createAccount(t)
	if _, err := r.access(t, c, 0, ac.Write, []byte("intact")); err != nil {
		t.Fatal(err)
	}
	var g ristretto.Point
	g.SetBase()
	err := r.st1.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketData).ForEach(func(k, v []byte) error {
			cts, err := dataoram.UnmarshalBlock(v)
			if err != nil {
				return err
			}
			for i := range cts {
				cts[i].C.Add(&cts[i].C, &g)
			}
			return tx.Bucket(bucketData).Put(k, dataoram.MarshalBlock(cts))
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.access(t, c, 0, ac.Read, nil)
	if err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "do not decrypt") {
		t.Fatalf("read of altered DataORAM: %q, %v", got, err)
	}
}

// A server that crashed during a call, before committing it, comes back one call behind:
// at the next session the other server undoes that call (it never completed for the
// client, who had no reply from the crashed server), and both go on from the same state.
func TestCrashBeforeCommitRolledBack(t *testing.T) {
	r := newRig(t, testParams)
	c := r.createAccount(t)
	if _, err := r.access(t, c, 1, ac.Write, []byte("completed")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.access(t, c, 1, ac.Write, []byte("interrupted")); err != nil {
		t.Fatal(err)
	}
	if err := r.st2.Rollback(); err != nil { // Server 2 as if it died before its commit
		t.Fatal(err)
	}
	r.connect(t)
	if !r.s1.RolledBack || r.s2.RolledBack || r.s1.Calls() != r.s2.Calls() {
		t.Fatalf("rolled back %v/%v, calls %d/%d", r.s1.RolledBack, r.s2.RolledBack, r.s1.Calls(), r.s2.Calls())
	}
	got, err := r.access(t, c, 1, ac.Read, nil)
	if err != nil || !bytes.HasPrefix(got, []byte("completed\x00")) {
		t.Fatalf("after the rollback: %q, %v", got, err)
	}
	if err := r.st2.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := r.st2.Rollback(); err == nil {
		t.Fatal("a second rollback in a row succeeded")
	}
}

// The trees' shares are stored per node and a commit writes only the nodes the access
// touched: after one access on a fresh deployment the state record holds no tree bits, and
// each tree has at most its stash and three paths (read, two evictions) stored.
func TestTreesStoredPerNode(t *testing.T) {
	r := newRig(t, testParams)
	c := r.createAccount(t)
	if _, err := r.access(t, c, 1, ac.Write, []byte("x")); err != nil {
		t.Fatal(err)
	}
	st, _ := r.st1.LoadState()
	perTree := map[byte]int{}
	var stateLen int
	err := r.st1.db.View(func(tx *bbolt.Tx) error {
		stateLen = len(tx.Bucket(bucketState).Get(keyState))
		return tx.Bucket(bucketTrees).ForEach(func(k, _ []byte) error {
			perTree[k[0]]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if stateLen != len(st.Marshal()) || stateLen > stateHeader+8*len(st.Maps)+(len(st.Pos)+7)/8 {
		t.Fatalf("state record of %d bytes holds more than the header and the base map", stateLen)
	}
	if len(perTree) != st.Trees() {
		t.Fatalf("nodes stored for %d trees, want %d", len(perTree), st.Trees())
	}
	for i, n := range perTree {
		if d := st.TreeShare(int(i)).L.D; n < 1+d+1 || n > 1+3*(d+1) {
			t.Fatalf("tree %d: %d nodes stored, want the stash and 1 to 3 paths of %d", i, n, d+1)
		}
	}
}
