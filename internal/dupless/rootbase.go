package dupless

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
)

// Tree bases (docs/formats/key-record.md, "Tree root, version 2"). A version 1 root lists
// every record of the namespace, so every changing command re-sent, and every snapshot
// kept, ~60 bytes per record: a lone put into a namespace of 15,000 files wrote 900 KB of
// root. Past rootBaseFrom bytes of entries a root is version 2 instead: a reference to a
// tree base (.veil/bases/<id>, an immutable sealed list of every entry at some point) and
// the delta since it (paths added, changed or removed). A command writes the base's delta
// plus its own changes; once that delta outgrows a quarter of the base (or rootDeltaMax),
// it writes a new base (a checkpoint) and a root with an empty delta. Roots written since
// then share the base: what a change costs, and what a snapshot keeps, is its delta.
// Readers build the full entry list (treeRoot.Entries) from the base and the delta, so
// nothing else changes; the root authenticates its base by the base object's SHA-256.
// 'veil prune' deletes bases no retained root refers to.

const (
	rootVersion2 = 0x02
	baseVersion  = 0x01
	basesDir     = ".veil/bases"
	baseIDSize   = 16
)

// rootBaseFrom is the size of a root's marshalled entries from which it is written as
// version 2 (below it, version 1: the whole list, as before); rootDeltaMax bounds a
// version 2 root's delta (it then checkpoints), so that a lone put's root fits its batch
// whatever the namespace's size. Variables for tests.
var (
	rootBaseFrom = 32 << 10
	rootDeltaMax = 48 << 10
)

// rootBase is a tree base: the entries a version 2 root's delta applies to.
type rootBase struct {
	id      [baseIDSize]byte
	sum     [32]byte            // SHA-256 of the sealed base object (set when sealed or opened)
	count   uint32              // its number of entries
	entries map[string][32]byte // nil until resolved (a parsed root names its base only); never changed once set
	sealed  []byte              // the sealed object while it is still to be stored (a new checkpoint)
}

func baseName(id [baseIDSize]byte) string { return hex.EncodeToString(id[:]) }

func baseAD(name string) []byte { return append([]byte("veil/v2 tree base\x00"), name...) }

// rootADFor is the AD of a root of the given version: version 2 has its own, so that a
// root's version byte is authenticated too.
func rootADFor(version byte, name string) []byte {
	if version == rootVersion2 {
		return append([]byte("veil/v2 tree root\x00"), name...)
	}
	return rootAD(name)
}

// entriesSize is the marshalled size of entries (each: length, path, hash).
func entriesSize(m map[string][32]byte) int {
	n := 0
	for p := range m {
		n += 2 + len(p) + 32
	}
	return n
}

// deltaSize is the marshalled size of a version 2 root's delta.
func deltaSize(d map[string]*[32]byte) int {
	n := 0
	for p, h := range d {
		n += 2 + len(p) + 1
		if h != nil {
			n += 32
		}
	}
	return n
}

// chooseForm decides how next (its Entries complete) is written, given prev, the root it
// follows, and changes, the paths changed since prev: version 1 while its entries are
// small; else prev's base with the delta grown by changes, while that delta stays small;
// else a new base (sealed when the root is).
func (next *treeRoot) chooseForm(prev *treeRoot, changes map[string]*[32]byte) {
	full := entriesSize(next.Entries)
	if full <= rootBaseFrom {
		return
	}
	if prev != nil && prev.base != nil && prev.base.entries != nil {
		d := make(map[string]*[32]byte, len(prev.delta)+len(changes))
		maps.Copy(d, prev.delta)
		for p, h := range changes {
			d[p] = h
		}
		for p, h := range d { // what equals the base again is no change
			was, ok := prev.base.entries[p]
			if h == nil && !ok || h != nil && ok && was == *h {
				delete(d, p)
			}
		}
		if ds := deltaSize(d); ds <= full/4 && ds <= rootDeltaMax {
			next.base, next.delta = prev.base, d
			return
		}
	}
	b := &rootBase{count: uint32(len(next.Entries)), entries: maps.Clone(next.Entries)}
	rand.Read(b.id[:])
	next.base, next.delta = b, map[string]*[32]byte{}
}

// reuseBase puts next, whose form is a new base (chooseForm), on written instead: a base
// this command stored for a root that then lost its number to another command's. When
// next's entries differ from written's by a delta chooseForm would keep (none, if the
// other command's changes were overwritten by this one's), written is as good a
// checkpoint, and a retried publish writes no second base: without this, every lost
// race of a large command left one more base for prune. It reports whether it did.
func (next *treeRoot) reuseBase(written *rootBase) bool {
	if written == nil || next.base == nil || next.base.sum != ([32]byte{}) {
		return false
	}
	d := map[string]*[32]byte{}
	for p, h := range next.Entries {
		if was, ok := written.entries[p]; !ok || was != h {
			d[p] = &h
		}
	}
	for p := range written.entries {
		if _, ok := next.Entries[p]; !ok {
			d[p] = nil
		}
	}
	if ds := deltaSize(d); ds > entriesSize(next.Entries)/4 || ds > rootDeltaMax {
		return false
	}
	next.base, next.delta = written, d
	return true
}

// materialize sets r.Entries from its resolved base and its delta.
func (r *treeRoot) materialize() {
	r.Entries = maps.Clone(r.base.entries)
	for p, h := range r.delta {
		if h == nil {
			delete(r.Entries, p)
		} else {
			r.Entries[p] = *h
		}
	}
}

// marshalV2 is a version 2 root's plaintext.
func (r *treeRoot) marshalV2() []byte {
	b := make([]byte, 0, rootHeadSize+baseIDSize+32+4+deltaSize(r.delta))
	b = binary.BigEndian.AppendUint64(b, r.Seq)
	b = binary.BigEndian.AppendUint64(b, uint64(r.Time))
	b = append(b, r.Parent[:]...)
	b = append(b, r.base.id[:]...)
	b = append(b, r.base.sum[:]...)
	b = binary.BigEndian.AppendUint32(b, r.base.count)
	return appendSortedEntries(b, r.delta, func(b []byte, h *[32]byte) []byte {
		if h == nil {
			return append(b, 0)
		}
		return append(append(b, 1), h[:]...)
	})
}

// unmarshalRootV2 parses a version 2 root's plaintext; its base is named, not resolved.
func unmarshalRootV2(b []byte) (*treeRoot, error) {
	p := &parser{b: b}
	r := &treeRoot{Seq: p.u64(), Time: int64(p.u64()), base: &rootBase{}}
	copy(r.Parent[:], p.take(32))
	copy(r.base.id[:], p.take(baseIDSize))
	copy(r.base.sum[:], p.take(32))
	r.base.count = p.u32()
	n := p.u32()
	if p.err == nil && (n > maxRootPaths || r.base.count > maxRootPaths || uint64(n)*4 > uint64(len(p.b))) {
		return nil, fmt.Errorf("tree root: %d changes do not fit %d bytes", n, len(p.b))
	}
	var err error
	r.delta, err = sortedEntries(p, n, "tree root", func(p *parser) *[32]byte {
		switch p.u8() {
		case 0:
			return nil
		case 1:
			var h [32]byte
			copy(h[:], p.take(32))
			return &h
		}
		if p.err == nil {
			p.err = fmt.Errorf("%w: a change neither removes nor lists", ErrRecord)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// sealBase seals a new base (once) and sets its sum.
func (k *userKeys) sealBase(b *rootBase) {
	if b.sealed != nil || b.sum != ([32]byte{}) {
		return
	}
	b.sealed = k.sealBaseNonce(b, newRootNonce())
}

func (k *userKeys) sealBaseNonce(b *rootBase, nonce []byte) []byte {
	z := rootEnc.EncodeAll(appendHashEntries(nil, b.entries), nil)
	out := sealHeaded(k.roots, baseVersion, nonce, z, baseAD(baseName(b.id)))
	b.sum = sha256.Sum256(out)
	return out
}

// openBase authenticates the base object b stored as .veil/bases/<id>, which a root
// names with its SHA-256 sum and count, and returns its entries.
func (k *userKeys) openBase(b []byte, id [baseIDSize]byte, sum [32]byte, count uint32) (map[string][32]byte, error) {
	name := baseName(id)
	if sha256.Sum256(b) != sum {
		return nil, fmt.Errorf("tree base %s: not the base its root names (replaced or damaged)", name)
	}
	if !headedFits(k.roots, b) || b[0] != baseVersion {
		return nil, fmt.Errorf("tree base %s: not a version %d base of %d bytes", name, baseVersion, len(b))
	}
	z, err := openHeaded(k.roots, b, baseAD(name))
	if err != nil {
		return nil, fmt.Errorf("tree base %s: authentication failed (tampered, renamed, or another key's)", name)
	}
	plain, err := rootDec.DecodeAll(z, nil)
	if err != nil {
		return nil, fmt.Errorf("tree base %s: %w", name, err)
	}
	return readHashEntries(&parser{b: plain}, "tree base "+name, &count)
}
