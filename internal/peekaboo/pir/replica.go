package pir

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"
)

// BucketName is the bbolt bucket both servers keep their entries in: pair id -> u32 hash
// || slot (docs/formats/peekaboo-state.md).
var BucketName = []byte("pir")

// Change is one pair's entry to add (Add set) or the pair id whose entry to remove.
type Change struct {
	ID  [IDSize]byte
	Add *Entry // nil: remove the id's entry
}

// EntrySize is an entry's stored and wire form: u32 hash || slot.
const EntrySize = 4 + SlotSize

// Bytes is e's stored and wire form.
func (e *Entry) Bytes() (b [EntrySize]byte) {
	binary.BigEndian.PutUint32(b[:4], e.Hash)
	copy(b[4:], e.Slot[:])
	return b
}

// EntryFrom reads an entry from its stored and wire form.
func EntryFrom(b [EntrySize]byte) Entry {
	e := Entry{Hash: binary.BigEndian.Uint32(b[:4])}
	copy(e.Slot[:], b[4:])
	return e
}

func decodeEntry(b []byte) (Entry, error) {
	if len(b) != EntrySize {
		return Entry{}, fmt.Errorf("private-query entry of %d bytes, want %d", len(b), EntrySize)
	}
	return EntryFrom([EntrySize]byte(b)), nil
}

// Load fills t from the entries bucket of tx (created by the servers' OpenState).
func Load(tx *bbolt.Tx, t *Table) error {
	b := tx.Bucket(BucketName)
	if b == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	touched := map[uint32]bool{}
	err := b.ForEach(func(k, v []byte) error {
		e, err := decodeEntry(v)
		if err != nil {
			return fmt.Errorf("pair %x: %w", k, err)
		}
		if t.insert(e, false) {
			touched[e.Hash&(1<<t.p.Bits-1)] = true
		}
		return nil
	})
	for bk := range touched {
		t.seal(bk)
	}
	return err
}

// InBuckets returns the stored entries (id and entry) whose bucket is in set.
func InBuckets(tx *bbolt.Tx, p Params, set map[uint32]bool) ([]Change, error) {
	var out []Change
	b := tx.Bucket(BucketName)
	if b == nil {
		return nil, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		e, err := decodeEntry(v)
		if err != nil || len(k) != IDSize {
			return fmt.Errorf("pair %x: %v", k, err)
		}
		if set[e.Hash&(1<<p.Bits-1)] {
			c := Change{Add: &e}
			copy(c.ID[:], k)
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// Update runs fn in one transaction of db and applies the changes it returns to the
// stored entries and to t (t nil: fn only), undoing t's in-memory changes if the
// transaction does not commit. It returns, per change, whether its new entry was placed.
func Update(db *bbolt.DB, t *Table, fn func(tx *bbolt.Tx) ([]Change, error)) ([]bool, error) {
	var placed []bool
	var undo func()
	err := db.Update(func(tx *bbolt.Tx) error {
		changes, err := fn(tx)
		if err != nil || t == nil {
			return err
		}
		placed, undo, err = Apply(tx, t, changes)
		return err
	})
	if err != nil && undo != nil {
		undo()
	}
	return placed, err
}

// Apply makes changes inside the caller's bbolt transaction and to t: an id's old entry
// (if any) is removed, its new one added if its bucket has room. It returns, per change,
// whether the new entry was placed, and an undo that the caller runs if the transaction
// does not commit, so memory never holds what the file does not.
func Apply(tx *bbolt.Tx, t *Table, changes []Change) (placed []bool, undo func(), err error) {
	b, err := tx.CreateBucketIfNotExists(BucketName)
	if err != nil {
		return nil, nil, err
	}
	var removed, added []Entry
	undo = func() {
		for _, e := range added {
			t.Delete(e)
		}
		for _, e := range removed {
			t.Insert(e)
		}
	}
	placed = make([]bool, len(changes))
	for i, c := range changes {
		if old := b.Get(c.ID[:]); old != nil {
			e, err := decodeEntry(old)
			if err != nil {
				undo()
				return nil, nil, err
			}
			if t.Delete(e) {
				removed = append(removed, e)
			}
			if err := b.Delete(c.ID[:]); err != nil {
				undo()
				return nil, nil, err
			}
		}
		if c.Add == nil || !t.Insert(*c.Add) {
			continue
		}
		added = append(added, *c.Add)
		placed[i] = true
		eb := c.Add.Bytes() // a fresh array per entry: bbolt keeps the value until commit
		if err := b.Put(c.ID[:], eb[:]); err != nil {
			undo()
			return nil, nil, err
		}
	}
	return placed, undo, nil
}
