package oblivisync

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// superblock is the decoded "super" file.
type superblock struct {
	Epoch   uint64
	NextIno uint64
	Written []uint64 // epoch each backend file was last written at (0: never)
	Pages   map[uint32]pageLoc
	// LastChange is the newest epoch <= Epoch whose superblock changed the committed
	// state (wrote or dropped a metadata page). It is an optional field after the page
	// table (HasChange); older writers' superblocks lack it, and older readers never look
	// past the page table. A starting writer needs it (nextEpoch in epoch.go).
	LastChange uint64
	HasChange  bool
	// Tags[f] binds backend file f's exact version: the first 8 bytes (big endian) of the
	// nonce file f was sealed under when it was written at Written[f] (0: not known, e.g.
	// written under a superblock without the field, or never written). A second optional
	// field (HasTags), after LastChange; found by review in session 12: an aborted epoch's
	// files carry the epoch number a restarted writer may reuse, so the number alone let
	// the cloud put them back. Readers refuse a file stamped Written[f] whose tag differs.
	Tags    []uint64
	HasTags bool
}

// The optional superblock extension after the page table: a version byte (zero padding
// means absent) and LastChange.
const (
	superExtVersion = 1
	superExtLen     = 1 + 8
	superTagsExt    = 2 // followed by N u64 tags
)

// superTagsLen is the size of the tags field for n backend files.
func superTagsLen(n int) int { return 1 + 8*n }

// tagsFit reports whether superblocks of this backend carry the tags field: backends
// created since it exists always do (Init keeps room for it); an older backend whose N
// leaves no room for it keeps the behaviour from before (epoch numbers only).
func tagsFit(g geometry, n int) bool { return superMinFixed+superTagsLen(n)+8*n <= g.plain }

// superMinFixed: the room Params.validate keeps beside the written[] table (the fixed
// fields, the last-change field and some slack).
const superMinFixed = 64

// nonceTag is the tag of a file sealed under nonce.
func nonceTag(nonce []byte) uint64 { return binary.BigEndian.Uint64(nonce) }

// tag is the version tag the superblock records for backend file f (0: not known).
func (s *superblock) tag(f uint32) uint64 {
	if !s.HasTags {
		return 0
	}
	return s.Tags[f]
}

// pageLoc locates a metadata page object.
type pageLoc struct {
	Size  uint32
	Frags []ref
}

func (s *superblock) encode(g geometry) ([]byte, error) {
	b := make([]byte, 0, g.plain)
	b = binary.BigEndian.AppendUint64(b, s.Epoch)
	b = binary.BigEndian.AppendUint64(b, s.NextIno)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Written)))
	for _, e := range s.Written {
		b = binary.BigEndian.AppendUint64(b, e)
	}
	pages := make([]uint32, 0, len(s.Pages))
	for p := range s.Pages {
		pages = append(pages, p)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	b = binary.BigEndian.AppendUint32(b, uint32(len(pages)))
	for _, p := range pages {
		pl := s.Pages[p]
		b = binary.BigEndian.AppendUint32(b, p)
		b = binary.BigEndian.AppendUint32(b, pl.Size)
		b = binary.BigEndian.AppendUint32(b, uint32(len(pl.Frags)))
		for _, r := range pl.Frags {
			b = appendRef(b, r)
		}
	}
	if len(b) > g.plain {
		return nil, fmt.Errorf("%w: page table (%d bytes) exceeds the superblock (%d bytes)", ErrNoSpace, len(b), g.plain)
	}
	// The writer keeps room for the extension (size counts it); a superblock full to the
	// byte from before it existed goes without, which a starting writer reads as "the
	// last epoch may have changed the committed state".
	if s.HasChange && len(b)+superExtLen <= g.plain {
		b = append(b, superExtVersion)
		b = binary.BigEndian.AppendUint64(b, s.LastChange)
	}
	if s.HasTags && len(s.Tags) == len(s.Written) && len(b)+superTagsLen(len(s.Tags)) <= g.plain {
		b = append(b, superTagsExt)
		for _, t := range s.Tags {
			b = binary.BigEndian.AppendUint64(b, t)
		}
	}
	return b[:g.plain], nil
}

// size is the encoded length of s.
func (s *superblock) size() int {
	n := 8 + 8 + 4 + 8*len(s.Written) + 4
	for _, pl := range s.Pages {
		n += 12 + refLen*len(pl.Frags)
	}
	if s.HasChange {
		n += superExtLen
	}
	if s.HasTags {
		n += superTagsLen(len(s.Written))
	}
	return n
}

func decodeSuper(b []byte, g geometry, nfiles int) (*superblock, error) {
	be := binary.BigEndian
	if len(b) < 20 {
		return nil, fmt.Errorf("%w: superblock truncated", ErrFormat)
	}
	s := &superblock{Epoch: be.Uint64(b), NextIno: be.Uint64(b[8:]), Pages: map[uint32]pageLoc{}}
	if n := int(be.Uint32(b[16:])); n != nfiles {
		return nil, fmt.Errorf("%w: superblock lists %d backend files, key file says %d", ErrFormat, n, nfiles)
	}
	p := 20
	if len(b) < p+8*nfiles+4 {
		return nil, fmt.Errorf("%w: superblock truncated", ErrFormat)
	}
	s.Written = make([]uint64, nfiles)
	for i := range s.Written {
		s.Written[i] = be.Uint64(b[p:])
		if s.Written[i] > s.Epoch {
			return nil, fmt.Errorf("%w: superblock: file %d written in future epoch", ErrFormat, i)
		}
		p += 8
	}
	np := int(be.Uint32(b[p:]))
	p += 4
	for i := 0; i < np; i++ {
		if len(b) < p+12 {
			return nil, fmt.Errorf("%w: superblock page table truncated", ErrFormat)
		}
		pg, size, nf := be.Uint32(b[p:]), be.Uint32(b[p+4:]), int(be.Uint32(b[p+8:]))
		p += 12
		if nf > (len(b)-p)/refLen || nf != fragCount(uint64(size), g.C) {
			return nil, fmt.Errorf("%w: superblock: page %d has %d fragments for %d bytes", ErrFormat, pg, nf, size)
		}
		if _, dup := s.Pages[pg]; dup || uint64(pg)*inodesPerPage >= s.NextIno+inodesPerPage {
			return nil, fmt.Errorf("%w: superblock: page %d duplicated or beyond the inode counter", ErrFormat, pg)
		}
		pl := pageLoc{Size: size, Frags: make([]ref, nf)}
		for j := range pl.Frags {
			r := decodeRef(b[p:])
			if err := r.check(g, nfiles); err != nil || r.isHole() {
				return nil, fmt.Errorf("%w: superblock: page %d fragment %d: bad reference", ErrFormat, pg, j)
			}
			pl.Frags[j] = r
			p += refLen
		}
		s.Pages[pg] = pl
	}
	// The extensions, each optional, in this order: last change (0x01), then the file tags
	// (0x02). Anything else after them (zero padding, or a field this reader does not
	// know) is ignored.
	if len(b) >= p+superExtLen && b[p] == superExtVersion {
		s.LastChange, s.HasChange = be.Uint64(b[p+1:]), true
		if s.LastChange > s.Epoch {
			return nil, fmt.Errorf("%w: superblock: last change at epoch %d, after epoch %d", ErrFormat, s.LastChange, s.Epoch)
		}
		p += superExtLen
	}
	if len(b) >= p+superTagsLen(nfiles) && b[p] == superTagsExt {
		p++
		s.Tags, s.HasTags = make([]uint64, nfiles), true
		for i := range s.Tags {
			s.Tags[i] = be.Uint64(b[p:])
			if s.Tags[i] != 0 && s.Written[i] == 0 {
				return nil, fmt.Errorf("%w: superblock: file %d has a version tag but was never written", ErrFormat, i)
			}
			p += 8
		}
	}
	return s, nil
}
