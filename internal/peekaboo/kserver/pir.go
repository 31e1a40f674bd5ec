package kserver

import (
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// openTable loads the private-query table whose geometry the directory's relay.cred
// names (none: private queries off).
func openTable(dir string, db *bbolt.DB) (*pir.Table, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileRelayCred))
	if err != nil {
		return nil, err
	}
	rc, _, err := wire.ParseRelayCred(b)
	if err != nil {
		return nil, err
	}
	p := pir.Params{Bits: rc.PIRBits, Slots: rc.PIRSlots}
	if !p.Enabled() {
		return nil, nil
	}
	t, err := pir.NewTable(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileRelayCred, err)
	}
	return t, db.View(func(tx *bbolt.Tx) error { return pir.Load(tx, t) })
}

// PIRParams is the private-query table's geometry (zero: off).
func (s *Server) PIRParams() pir.Params {
	if s.table == nil {
		return pir.Params{}
	}
	return s.table.Params()
}

// update runs fn and the private-query changes in one transaction, undoing the table's
// in-memory changes if it does not commit.
func (s *Server) update(changes []pir.Change, fn func(tx *bbolt.Tx) error) ([]bool, error) {
	return pir.Update(s.db, s.table, func(tx *bbolt.Tx) ([]pir.Change, error) {
		if err := own(tx); err != nil {
			return nil, err
		}
		return changes, fn(tx)
	})
}

// pirQuery opens a sealed private query, checks freshness and answers with this
// server's share, sealed to the client. It learns the DPF key only: nothing of the query.
func (s *Server) pirQuery(sealed []byte) ([]byte, uint8) {
	if s.table == nil {
		return nil, wire.StatusMalformed
	}
	q, err := wire.OpenPIRQuery(s.key, sealed)
	if err != nil {
		return nil, statusOf(err)
	}
	if st := s.fresh(q.Nonce, q.Time, true); st != 0 {
		return nil, st
	}
	k, err := dpf.Parse(q.DPFKey)
	if err != nil || k.Party != 1 {
		return nil, wire.StatusMalformed
	}
	a, err := s.table.Answer(k)
	if err != nil {
		return nil, wire.StatusMalformed
	}
	return wire.SealPIRAnswer(q, a), wire.StatusOK
}

// pirSync compares the V-server's bucket digests with this table's and returns, for
// every bucket that differs, the entries stored for it: the V-server replaces its own
// with them, so a crash between the two servers' commits heals.
func (s *Server) pirSync(digests []byte) ([]byte, error) {
	if s.table == nil {
		return nil, fmt.Errorf("%w: private queries are off", wire.ErrMalformed)
	}
	diff, err := s.table.Differing(digests, wire.MaxSyncBuckets)
	if err != nil {
		return nil, fmt.Errorf("%w: table sync: %v", wire.ErrMalformed, err)
	}
	out := &wire.PIRSync{}
	if len(diff) == 0 {
		return out.Marshal(), nil
	}
	set, pos := map[uint32]bool{}, map[uint32]int{}
	for i, b := range diff {
		set[b], pos[b] = true, i
		out.Buckets = append(out.Buckets, wire.SyncBucket{Index: b})
	}
	p := s.table.Params()
	err = s.db.View(func(tx *bbolt.Tx) error {
		cs, err := pir.InBuckets(tx, p, set)
		for _, c := range cs {
			sb := &out.Buckets[pos[c.Add.Hash&(1<<p.Bits-1)]]
			sb.Entries = append(sb.Entries, wire.SyncEntry{ID: c.ID, Entry: c.Add.Bytes()})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.log.Info("private-query table sync", "buckets", len(diff))
	return out.Marshal(), nil
}
