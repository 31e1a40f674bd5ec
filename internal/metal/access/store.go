package access

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	ristretto "github.com/bwesterb/go-ristretto"
	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/metal/oram"
)

// Store keeps a server's State, and on Server 1 DataORAM's ciphertext blocks, in its bbolt
// file. An access's changes are committed in one transaction (crash-safe: a SIGKILL
// leaves the state of the last completed access).
type Store struct {
	db    *bbolt.DB
	loads atomic.Uint64 // LoadState calls (Loads)
}

var (
	bucketState = []byte("metal-state")
	bucketData  = []byte("metal-data")
	bucketUndo  = []byte("metal-undo") // the state and blocks before the last call
	bucketTrees = []byte("metal-trees")
	keyState    = []byte("state")
)

// nodeKey names node n (0: the stash) of tree i (0: T_0, j: T_j) in bucket metal-trees: 9
// bytes, so that undo records tell nodes from DataORAM slots (8 bytes) by length.
func nodeKey(i int, n uint64) []byte { return binary.BigEndian.AppendUint64([]byte{byte(i)}, n) }

// NewStore uses db (opened by the caller), creating the buckets.
func NewStore(db *bbolt.DB) (*Store, error) {
	err := db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketState, bucketData, bucketUndo, bucketTrees} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
}

// LoadState returns the stored state, or nil if the server was never initialized.
func (s *Store) LoadState() (*State, error) {
	s.loads.Add(1)
	var st *State
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketState).Get(keyState)
		if v == nil {
			return nil
		}
		var err error
		if st, err = UnmarshalState(v); err != nil {
			return err
		}
		return tx.Bucket(bucketTrees).ForEach(func(k, v []byte) error {
			if len(k) != 9 {
				return fmt.Errorf("access: stored tree node key of %d bytes", len(k))
			}
			return st.DecodeNode(int(k[0]), binary.BigEndian.Uint64(k[1:]), v)
		})
	})
	return st, err
}

// Loads is how many times LoadState read the whole state (hundreds of MB at 2^20 files):
// a server reads it once per 2PC session (tests count it).
func (s *Store) Loads() uint64 { return s.loads.Load() }

// Header returns the stored state's fixed-size header (parameters, role, counters, key
// shares; no trees), or nil if the server was never initialized.
func (s *Store) Header() (*State, error) {
	var st *State
	err := s.db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketState).Get(keyState)
		if v == nil {
			return nil
		}
		var err error
		st, _, err = unmarshalHeader(v)
		return err
	})
	return st, err
}

// PublicInfo returns what a server tells clients about its stored state (its /v1/info):
// the parameters and the two DataORAM public key shares (the other server's is the
// identity until the servers first met). It reads the state's header only: loading the
// trees' shares (hundreds of MB at 2^20 files) for every unauthenticated request would let
// any client exhaust a server's memory.
func (s *Store) PublicInfo() (p Params, x, peerX ristretto.Point, err error) {
	st, err := s.Header()
	if err == nil && st == nil {
		err = errors.New("access: server state not initialized")
	}
	if err != nil {
		return Params{}, x, peerX, err
	}
	return st.P, st.Key.X, st.PeerX, nil
}

// putNodes writes the tree nodes st's accesses touched since the last commit; with undo,
// it first records each one's previous value (or absence) there.
func putNodes(tx *bbolt.Tx, st *State, undo *bbolt.Bucket) error {
	t := tx.Bucket(bucketTrees)
	for i := 0; i < st.Trees(); i++ {
		for _, n := range st.TreeShare(i).TakeTouched() {
			k := nodeKey(i, n)
			if undo != nil {
				old := []byte{0}
				if prev := t.Get(k); prev != nil {
					old = append([]byte{1}, prev...)
				}
				if err := undo.Put(k, old); err != nil {
					return err
				}
			}
			if err := t.Put(k, st.EncodeNode(i, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Commit stores st and the changed DataORAM blocks (slot key -> marshalled block) at once.
func (s *Store) Commit(st *State, blocks map[uint64][]byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		d := tx.Bucket(bucketData)
		for k, v := range blocks {
			if err := d.Put(slotKey(k), v); err != nil {
				return err
			}
		}
		if err := putNodes(tx, st, nil); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put(keyState, st.Marshal())
	})
}

// commitCall is Commit for a completed call: in the same transaction it keeps what the
// call replaced (the previous state, and each changed block's previous value or its
// absence) in bucket metal-undo, so that Rollback can undo this one call.
func (s *Store) commitCall(st *State, blocks map[uint64][]byte) error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bucketUndo); err != nil {
			return err
		}
		u, err := tx.CreateBucket(bucketUndo)
		if err != nil {
			return err
		}
		if err := u.Put(keyState, tx.Bucket(bucketState).Get(keyState)); err != nil {
			return err
		}
		d := tx.Bucket(bucketData)
		for k, v := range blocks {
			old := []byte{0}
			if prev := d.Get(slotKey(k)); prev != nil {
				old = append([]byte{1}, prev...)
			}
			if err := u.Put(slotKey(k), old); err != nil {
				return err
			}
			if err := d.Put(slotKey(k), v); err != nil {
				return err
			}
		}
		if err := putNodes(tx, st, u); err != nil {
			return err
		}
		return tx.Bucket(bucketState).Put(keyState, st.Marshal())
	})
}

// Rollback undoes the last call (once): the state and blocks return to what they were
// before it. It fails when there is nothing to undo.
func (s *Store) Rollback() error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		u := tx.Bucket(bucketUndo)
		prev := u.Get(keyState)
		if prev == nil {
			return fmt.Errorf("access: no call to undo")
		}
		if err := tx.Bucket(bucketState).Put(keyState, prev); err != nil {
			return err
		}
		d, t := tx.Bucket(bucketData), tx.Bucket(bucketTrees)
		err := u.ForEach(func(k, v []byte) error {
			if string(k) == string(keyState) {
				return nil
			}
			b := d
			if len(k) == 9 {
				b = t
			}
			if len(v) > 0 && v[0] == 1 {
				return b.Put(k, v[1:])
			}
			return b.Delete(k)
		})
		if err != nil {
			return err
		}
		if err := tx.DeleteBucket(bucketUndo); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bucketUndo)
		return err
	})
}

// Block returns the stored block at slot key k (a copy), or nil if it was never written:
// the caller then uses an encryption of zeros (the paper's sparse-file initialization).
func (s *Store) Block(k uint64) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketData).Get(slotKey(k)); v != nil {
			out = append([]byte{}, v...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("access: read DataORAM slot: %w", err)
	}
	return out, nil
}

func slotKey(k uint64) []byte { return binary.BigEndian.AppendUint64(nil, k) }

// stashKey and pathKeys name DataORAM slots: stash slot i, and the slots of the stash and
// the path to leaf in oram's slot order (stash, then buckets root to leaf, BucketSize each).
func stashKey(i int) uint64 { return 1<<63 | uint64(i) }

func pathKeys(p Params, leaf uint64) []uint64 {
	keys := make([]uint64, 0, p.Slots())
	for i := 0; i < p.Stash; i++ {
		keys = append(keys, stashKey(i))
	}
	for d := 0; d <= p.D; d++ {
		node := uint64(1)<<d | leaf>>(p.D-d)
		for k := 0; k < oram.BucketSize; k++ {
			keys = append(keys, node*oram.BucketSize+uint64(k))
		}
	}
	return keys
}
