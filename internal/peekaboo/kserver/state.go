package kserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/veil-project/veil/internal/server"

	"go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/peekaboo/index"
	"github.com/veil-project/veil/internal/peekaboo/pir"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

var (
	bucketKeys = []byte("keys")
	bucketMeta = []byte("meta")
	keyReplay  = []byte("replay") // in meta: u64 unix ms, the replay high-water mark
	// bucketReplay holds the queries answered above the mark: u64 stamp || nonce.
	bucketReplay = []byte("replay")
)

func openDB(path string) (*bbolt.DB, error) {
	return server.OpenState(path, "K-server", "1", 2*time.Second, bucketKeys, pir.BucketName, bucketReplay)
}

// load rebuilds the index from the keys bucket.
func load(db *bbolt.DB) (*index.Index, error) {
	idx := index.New()
	err := db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketKeys).ForEach(func(k, v []byte) error {
			id, err := wire.ParseID(k)
			if err != nil {
				return err
			}
			it, err := wire.ParseKeyRecord(id, v)
			if err != nil {
				return fmt.Errorf("pair %x: %w", k, err)
			}
			idx.Put(it)
			return nil
		})
	})
	return idx, err
}

// store commits items in one transaction (fsynced) with their private-query entries,
// then adds them to the index. It returns the entries for the V-server's replica.
func (s *Server) store(items []wire.KeyItem) ([]wire.PIREntry, error) {
	changes := make([]pir.Change, len(items))
	for i := range items {
		changes[i].ID = items[i].ID
		if len(items[i].Pseudonyms) == 0 { // restricted pairs stay out: PIR bypasses the K-server's check
			e := pir.Derive(items[i].Key).Seal(items[i].ID)
			changes[i].Add = &e
		}
	}
	placed, err := s.update(changes, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		for i := range items {
			// The V-server checks who owns the id it reads in the clear; the id sealed in
			// the item is read here only, so a client could name another owner's pair in
			// it. Owners draw fresh random ids, so an id held already is refused (whole
			// chunk), never replaced. So is an id sharing its first 12 bytes (a match
			// record's nonce) with one held: two records of one reply must not share it.
			if k, _ := b.Cursor().Seek(items[i].ID[:12]); k != nil && bytes.HasPrefix(k, items[i].ID[:12]) {
				return fmt.Errorf("%w: publication item %d: pair id %x collides with one held (pair ids are never republished)", wire.ErrMalformed, i, items[i].ID[:4])
			}
			if err := b.Put(items[i].ID[:], wire.MarshalKeyRecord(&items[i])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range items {
		s.idx.Put(&items[i])
	}
	if s.table == nil {
		return nil, nil
	}
	out := make([]wire.PIREntry, len(items))
	for i, c := range changes {
		if c.Add != nil && placed[i] {
			out[i] = wire.PIREntry{Placed: true, Entry: c.Add.Bytes()}
		} else if c.Add != nil {
			s.m.pirOverflow.Inc()
		}
	}
	return out, nil
}

// remove deletes ids in one transaction and from the index; it returns how many existed.
func (s *Server) remove(ids []wire.ID) (int, error) {
	n := 0
	changes := make([]pir.Change, len(ids))
	for i, id := range ids {
		changes[i].ID = id
	}
	_, err := s.update(changes, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketKeys)
		n = 0
		for _, id := range ids {
			if b.Get(id[:]) != nil {
				n++
				if err := b.Delete(id[:]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		s.idx.Delete(id)
	}
	return n, nil
}

// Has reports whether the K-server holds a key for pair id (for checks and operators).
func (s *Server) Has(id wire.ID) bool {
	found := false
	s.db.View(func(tx *bbolt.Tx) error {
		found = tx.Bucket(bucketKeys).Get(id[:]) != nil
		return nil
	})
	return found
}

// readMark returns the replay high-water mark (ok false: none stored).
func readMark(db *bbolt.DB) (mark int64, ok bool, err error) {
	err = db.View(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get(keyReplay)
		if v == nil {
			return nil
		}
		if len(v) != 8 || v[0]&0x80 != 0 {
			return fmt.Errorf("meta/replay: %x, want a u64 of unix milliseconds", v)
		}
		mark, ok = int64(binary.BigEndian.Uint64(v)), true
		return nil
	})
	return mark, ok, err
}

func putMark(tx *bbolt.Tx, mark int64) error {
	return tx.Bucket(bucketMeta).Put(keyReplay, binary.BigEndian.AppendUint64(nil, uint64(mark)))
}

// dbReplay is the replay cache's store in kserver.db: meta/replay holds the mark, bucket
// replay one key per query answered above it (u64 stamp || nonce, value empty).
type dbReplay struct{ db *bbolt.DB }

func (d dbReplay) mark(ms int64) error {
	return d.db.Update(func(tx *bbolt.Tx) error {
		if err := own(tx); err != nil {
			return err
		}
		return putMark(tx, ms)
	})
}

func (d dbReplay) ahead(nonce [16]byte, stamp, expired int64) error {
	return d.db.Update(func(tx *bbolt.Tx) error {
		if err := own(tx); err != nil {
			return err
		}
		b := tx.Bucket(bucketReplay)
		if err := forgetBefore(b, expired); err != nil {
			return err
		}
		return b.Put(append(binary.BigEndian.AppendUint64(nil, uint64(stamp)), nonce[:]...), nil)
	})
}

// forgetBefore deletes the replay records stamped before ms (keys sort by stamp).
func forgetBefore(b *bbolt.Bucket, ms int64) error {
	c := b.Cursor()
	for k, _ := c.First(); k != nil && int64(binary.BigEndian.Uint64(k)) < ms; k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// openReplay resumes the replay cache from kserver.db: the mark and the nonces stored
// above it (those the window or the mark refuse anyway are deleted).
//
// State without a mark was written by a veil that kept none, whose replay memory was in
// memory only and which took queries stamped up to a replay window ahead of its clock.
// Its keyword queries were sealed as query plaintext version 1, which this veil refuses
// (wire.ParseQuery): none can be answered again, and keyword queries are served at once.
// Its private queries are the ones this veil takes: without a private-query table it
// answered none, and the mark starts at 0 as on a new K-server; with one, this start
// stores the mark now + the replay window (every private query that veil answered was
// stamped at or before it) and refuses private queries stamped up to it, for one
// window, once (a restart within that window refuses every query up to the mark).
//
// State such a veil opened after this one (others: a downgrade, then an upgrade again;
// writer.go) has a mark, but one that veil did not move: private queries are refused the
// same way. Keyword queries keep the stored mark as their floor (that veil's were version
// 1; a veil keeping the mark but not meta/writer moved it), and so the replay records
// above it.
func (s *Server) openReplay(others bool) (*replayCache, error) {
	mark, ok, err := readMark(s.db)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileDB, err)
	}
	now := s.cfg.now()
	keywordFloor := mark
	if !ok {
		keywordFloor = 0 // the older veil answered no keyword query this one takes
	}
	older := (!ok || others) && s.table != nil // it may have answered private queries
	ahead := map[[16]byte]int64{}
	err = s.db.Update(func(tx *bbolt.Tx) error {
		if err := own(tx); err != nil {
			return err
		}
		if older {
			mark = max(mark, now.Add(s.cfg.ReplayWindow).UnixMilli())
		}
		if older || !ok {
			if err := putMark(tx, mark); err != nil {
				return err
			}
		}
		b := tx.Bucket(bucketReplay)
		if err := forgetBefore(b, max(keywordFloor+1, now.Add(-s.cfg.ReplayWindow).UnixMilli())); err != nil {
			return err
		}
		return b.ForEach(func(k, _ []byte) error {
			if len(k) != 8+16 || k[0]&0x80 != 0 {
				return fmt.Errorf("replay record %x: want u64 stamp || 16-byte nonce", k)
			}
			ahead[[16]byte(k[8:])] = int64(binary.BigEndian.Uint64(k))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: replay records: %w", FileDB, err)
	}
	c := newStoredReplayCache(s.cfg.ReplayWindow, mark, ahead, dbReplay{s.db})
	if older {
		c.floor = keywordFloor
		for n, t := range ahead { // the records between the two floors still count
			if t > keywordFloor {
				c.seen[n] = t + s.cfg.ReplayWindow.Milliseconds()
			}
		}
		why := "state has no replay high-water mark (written by an older veil, which took queries stamped up to the replay window ahead)"
		if ok {
			why = "an older veil, which keeps no replay high-water mark, opened this state since this veil last wrote it (a downgrade and an upgrade again)"
		}
		s.log.Warn(why+": keyword queries are served; private queries stamped before the mark are refused, so none answered before this start is answered again",
			"mark", time.UnixMilli(mark).UTC().Format(time.RFC3339))
	}
	return c, nil
}
