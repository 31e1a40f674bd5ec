package wire

import (
	"crypto/hpke"
	"fmt"
)

// Private-query (PIR) messages: docs/formats/peekaboo-wire.md, "Private queries".
const (
	TypePIRSearch = 0x1a
	TypePIRReply  = 0x1b
	TypeFetch     = 0x1c

	KindPIR     = 4 // relay payload: a sealed PIR query
	KindPIRSync = 5 // relay payload: the V-server's bucket digests; reply: PIRSync

	infoPIR       = "veil peekaboo v1 pir"
	pirAnswerAAD  = "veil peekaboo v1 pir answer"
	pirPad        = 512 // a sealed PIR query's plaintext is exactly this long
	MaxDPFKey     = pirPad - (1 + 32 + 16 + 8 + 2)
	MaxPIRAnswer  = 1 << 20
	MaxFetch      = 255 // ids per fetch: at most one bucket's slots
	PIREntrySize  = 4 + 40
	fetchSize     = 2 + 3 + MaxFetch*IDSize
	pirAnswerOver = 16 // AES-GCM tag
)

// PIRQuery is what a client seals to the K-server in private-query mode: a one-time key
// for the answer, a nonce and time against replay, and the K-server's DPF key.
type PIRQuery struct {
	OneTimeKey [32]byte
	Nonce      [16]byte
	Time       uint64
	DPFKey     []byte
}

// MarshalPIRQuery encodes the plaintext, zero-padded to exactly 512 bytes.
func MarshalPIRQuery(q *PIRQuery) ([]byte, error) {
	if len(q.DPFKey) == 0 || len(q.DPFKey) > MaxDPFKey {
		return nil, fmt.Errorf("dpf key of %d bytes: want 1..%d", len(q.DPFKey), MaxDPFKey)
	}
	w := &writer{}
	w.u8(Version)
	w.raw(q.OneTimeKey[:])
	w.raw(q.Nonce[:])
	w.u64(q.Time)
	w.b16(q.DPFKey)
	w.padTo(pirPad)
	return w.b, nil
}

// ParsePIRQuery decodes a PIR query plaintext.
func ParsePIRQuery(b []byte) (*PIRQuery, error) {
	r := newReader("pir query", b)
	if len(b) != pirPad {
		r.fail("%d bytes, want %d", len(b), pirPad)
	}
	if v := r.u8("version"); r.err == nil && v != Version {
		r.fail("version %d, want %d", v, Version)
	}
	q := &PIRQuery{}
	copy(q.OneTimeKey[:], r.take(32, "one-time key"))
	copy(q.Nonce[:], r.take(16, "nonce"))
	q.Time = r.u64("time")
	q.DPFKey = r.b16("dpf key")
	if r.err == nil && len(q.DPFKey) == 0 {
		r.fail("empty dpf key")
	}
	return q, r.end(true)
}

// SealPIRQuery seals q to the K-server (single-shot HPKE, its own info string).
func SealPIRQuery(pub *KServerPub, q *PIRQuery) ([]byte, error) {
	pt, err := MarshalPIRQuery(q)
	if err != nil {
		return nil, err
	}
	return hpke.Seal(pub.pub, kdf(), aead(), []byte(infoPIR), pt)
}

// OpenPIRQuery opens a sealed PIR query. ErrOpen means altered or not for this key.
func OpenPIRQuery(k *KServerKey, sealed []byte) (*PIRQuery, error) {
	if len(sealed) != encLen()+pirPad+16 {
		return nil, fmt.Errorf("%w: sealed pir query of %d bytes, want %d", ErrMalformed, len(sealed), encLen()+pirPad+16)
	}
	pt, err := hpke.Open(k.priv, kdf(), aead(), []byte(infoPIR), sealed)
	if err != nil {
		return nil, ErrOpen
	}
	return ParsePIRQuery(pt)
}

// SealedPIRQuerySize is the size of every sealed PIR query.
func SealedPIRQuerySize() int { return encLen() + pirPad + 16 }

func pirAD(q *PIRQuery) []byte { return append([]byte(pirAnswerAAD), q.Nonce[:]...) }

// SealPIRAnswer encrypts the K-server's answer to the client under the one-time key
// (AES-256-GCM, zero nonce: the key is used once), so the V-server, which holds the
// other share, cannot read it.
func SealPIRAnswer(q *PIRQuery, answer []byte) []byte {
	return matchAEAD(&q.OneTimeKey).Seal(nil, make([]byte, 12), answer, pirAD(q))
}

// OpenPIRAnswer decrypts the K-server's answer; ErrOpen if altered.
func OpenPIRAnswer(q *PIRQuery, sealed []byte) ([]byte, error) {
	pt, err := matchAEAD(&q.OneTimeKey).Open(nil, make([]byte, 12), sealed, pirAD(q))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// PIRSearch is a private-query request to the V-server: its own DPF key in the clear (a
// pseudorandom string to it) and the K-server's part sealed.
type PIRSearch struct {
	Key0   []byte
	Sealed []byte
}

func (m *PIRSearch) Marshal() []byte {
	w := newMsg(TypePIRSearch)
	w.b16(m.Key0)
	w.b16(m.Sealed)
	return w.b
}

func ParsePIRSearch(b []byte) (*PIRSearch, error) {
	r := newReader("pir search", b)
	r.header(TypePIRSearch)
	m := &PIRSearch{Key0: r.b16("dpf key"), Sealed: r.b16("sealed query")}
	if r.err == nil && (len(m.Key0) == 0 || len(m.Key0) > MaxDPFKey) {
		r.fail("dpf key of %d bytes", len(m.Key0))
	}
	if r.err == nil && len(m.Sealed) != SealedPIRQuerySize() {
		r.fail("sealed query of %d bytes, want %d", len(m.Sealed), SealedPIRQuerySize())
	}
	return m, r.end(false)
}

// PIRReply answers a PIRSearch: the K-server's status, the V-server's share and the
// K-server's share sealed to the client. Both shares have the table's bucket size.
type PIRReply struct {
	Status  uint8
	Share0  []byte
	Sealed1 []byte
}

func (m *PIRReply) Marshal() []byte {
	w := newMsg(TypePIRReply)
	w.u8(m.Status)
	w.b32(m.Share0)
	w.b32(m.Sealed1)
	return w.b
}

func ParsePIRReply(b []byte) (*PIRReply, error) {
	r := newReader("pir reply", b)
	r.header(TypePIRReply)
	m := &PIRReply{Status: r.u8("status"), Share0: r.b32("share"), Sealed1: r.b32("sealed share")}
	if r.err == nil && (m.Status > StatusInternal || len(m.Share0) > MaxPIRAnswer || len(m.Sealed1) > MaxPIRAnswer+pirAnswerOver) {
		r.fail("status %d or share sizes %d, %d out of range", m.Status, len(m.Share0), len(m.Sealed1))
	}
	return m, r.end(false)
}

// Fetch asks the V-server for the values of pair ids a private query found, padded to
// MaxFetch ids so its size says nothing about how many.
type Fetch struct{ IDs []ID }

func (m *Fetch) Marshal() []byte {
	w := newMsg(TypeFetch)
	w.u8(uint8(len(m.IDs)))
	for _, id := range m.IDs {
		w.raw(id[:])
	}
	w.b = append(w.b, make([]byte, fetchSize-len(w.b))...)
	return w.b
}

func ParseFetch(b []byte) (*Fetch, error) {
	r := newReader("fetch request", b)
	if len(b) != fetchSize {
		r.fail("%d bytes, want %d", len(b), fetchSize)
	}
	r.header(TypeFetch)
	n := int(r.u8("count"))
	m := &Fetch{IDs: make([]ID, 0, n)}
	for i := 0; i < n && r.err == nil; i++ {
		m.IDs = append(m.IDs, r.id("id"))
	}
	return m, r.end(true)
}

// PIREntry is the K-server's private-query table entry for one published pair, returned
// to the V-server so both tables hold the same: Placed is false when the pair is not in
// the table (restricted to pseudonyms, or its bucket is full).
type PIREntry struct {
	Placed bool
	Entry  [PIREntrySize]byte // u32 hash || slot
}

// PublishAck is the K-server's OK payload for a publication: pairs stored and, when the
// K-server keeps a private-query table, one entry per pair in chunk order.
type PublishAck struct {
	N       uint32
	Entries []PIREntry
}

func (m *PublishAck) Marshal() []byte {
	w := &writer{}
	w.u32(m.N)
	if len(m.Entries) == 0 {
		return w.b
	}
	w.u8(1)
	for _, e := range m.Entries {
		var f uint8
		if e.Placed {
			f = 1
		}
		w.u8(f)
		w.raw(e.Entry[:])
	}
	return w.b
}

func ParsePublishAck(b []byte) (*PublishAck, error) {
	r := newReader("publication ack", b)
	m := &PublishAck{N: r.u32("count")}
	if r.err != nil || len(r.b) == 0 {
		return m, r.end(false)
	}
	if f := r.u8("entries flag"); r.err == nil && f != 1 {
		r.fail("entries flag %d", f)
	}
	if r.err == nil && (m.N == 0 || m.N > MaxChunk || len(r.b) != int(m.N)*(1+PIREntrySize)) {
		r.fail("%d entry bytes for %d pairs", len(r.b), m.N)
	}
	for i := 0; i < int(m.N) && r.err == nil; i++ {
		e := PIREntry{}
		f := r.u8("placed")
		if r.err == nil && f > 1 {
			r.fail("entry %d: placed %d", i, f)
		}
		e.Placed = f == 1
		copy(e.Entry[:], r.take(PIREntrySize, "entry"))
		m.Entries = append(m.Entries, e)
	}
	return m, r.end(false)
}

// MaxSyncBuckets bounds the buckets one table sync repairs (the V-server asks again).
const MaxSyncBuckets = 4096

// SyncEntry is one stored private-query entry: the pair id and u32 hash || slot.
type SyncEntry struct {
	ID    ID
	Entry [PIREntrySize]byte
}

// SyncBucket is every entry the K-server holds in one bucket.
type SyncBucket struct {
	Index   uint32
	Entries []SyncEntry
}

// PIRSync is the K-server's answer to the V-server's bucket digests: the buckets whose
// digests differ, with the K-server's entries for them (the K-server is authoritative).
type PIRSync struct{ Buckets []SyncBucket }

func (m *PIRSync) Marshal() []byte {
	w := &writer{}
	w.u32(uint32(len(m.Buckets)))
	for _, b := range m.Buckets {
		w.u32(b.Index)
		w.u32(uint32(len(b.Entries)))
		for _, e := range b.Entries {
			w.raw(e.ID[:])
			w.raw(e.Entry[:])
		}
	}
	return w.b
}

func ParsePIRSync(b []byte) (*PIRSync, error) {
	r := newReader("table sync", b)
	n := r.count("buckets", MaxSyncBuckets, 8)
	m := &PIRSync{}
	for i := 0; i < n && r.err == nil; i++ {
		sb := SyncBucket{Index: r.u32("bucket")}
		k := r.count("entries", 255, IDSize+PIREntrySize)
		for j := 0; j < k && r.err == nil; j++ {
			e := SyncEntry{ID: r.id("id")}
			copy(e.Entry[:], r.take(PIREntrySize, "entry"))
			sb.Entries = append(sb.Entries, e)
		}
		m.Buckets = append(m.Buckets, sb)
	}
	return m, r.end(false)
}
