package wire

import "fmt"

// PublishPair is one pair as the owner sends it to the V-server: the value, ACL and owner
// blob in the clear for the V-server, and the key item sealed to the K-server.
type PublishPair struct {
	ID        ID
	Value     []byte
	ACL       []string // client names; empty: every registered user
	OwnerBlob []byte
	Sealed    []byte // the chunk item for this pair
}

// Publish is a publication chunk: pairs in the order their items were sealed.
type Publish struct {
	Enc   []byte
	Pairs []PublishPair
}

func (m *Publish) Marshal() []byte {
	w := newMsg(TypePublish)
	w.b16(m.Enc)
	w.u32(uint32(len(m.Pairs)))
	for _, p := range m.Pairs {
		w.raw(p.ID[:])
		w.b16(p.Value)
		w.names(p.ACL)
		w.b16(p.OwnerBlob)
		w.b16(p.Sealed)
	}
	return w.b
}

// CheckPair validates the V-server's fields of one pair.
func CheckPair(p *PublishPair) error {
	switch {
	case len(p.Value) > MaxValue:
		return fmt.Errorf("value of %d bytes: at most %d", len(p.Value), MaxValue)
	case len(p.ACL) > MaxACL:
		return fmt.Errorf("%d ACL names: at most %d", len(p.ACL), MaxACL)
	case len(p.OwnerBlob) > MaxOwnerBlob:
		return fmt.Errorf("owner blob of %d bytes: at most %d", len(p.OwnerBlob), MaxOwnerBlob)
	}
	for _, n := range p.ACL {
		if err := CheckName(n); err != nil {
			return err
		}
	}
	return nil
}

func ParsePublish(b []byte) (*Publish, error) {
	r := newReader("publish request", b)
	r.header(TypePublish)
	m := &Publish{Enc: r.b16("enc")}
	n := r.count("pairs", MaxChunk, IDSize+6)
	for i := 0; i < n && r.err == nil; i++ {
		p := PublishPair{ID: r.id("id"), Value: r.b16("value"), ACL: r.names("acl")}
		p.OwnerBlob, p.Sealed = r.b16("owner blob"), r.b16("sealed item")
		if r.err == nil {
			if err := CheckPair(&p); err != nil {
				r.fail("pair %d: %v", i, err)
			}
		}
		m.Pairs = append(m.Pairs, p)
	}
	if r.err == nil && n == 0 {
		r.fail("no pairs")
	}
	return m, r.end(false)
}

// Chunk returns the relay payload the K-server opens.
func (m *Publish) Chunk() *SealedChunk {
	c := &SealedChunk{Enc: m.Enc}
	for _, p := range m.Pairs {
		c.Items = append(c.Items, p.Sealed)
	}
	return c
}

// Count answers a publish or unpublish: how many pairs were stored or removed.
type Count struct{ N uint32 }

func (m *Count) Marshal() []byte {
	w := newMsg(TypeCount)
	w.u32(m.N)
	return w.b
}

func ParseCount(b []byte) (*Count, error) {
	r := newReader("count reply", b)
	r.header(TypeCount)
	m := &Count{N: r.u32("count")}
	return m, r.end(false)
}

// IDs is an unpublish request (owner -> V-server) and relay payload (V -> K).
type IDs struct{ IDs []ID }

func (m *IDs) Marshal() []byte {
	w := newMsg(TypeUnpublish)
	w.u32(uint32(len(m.IDs)))
	for _, id := range m.IDs {
		w.raw(id[:])
	}
	return w.b
}

func ParseIDs(b []byte) (*IDs, error) {
	r := newReader("id list", b)
	r.header(TypeUnpublish)
	n := r.count("ids", MaxUnpublish, IDSize)
	m := &IDs{IDs: make([]ID, 0, n)}
	for i := 0; i < n && r.err == nil; i++ {
		m.IDs = append(m.IDs, r.id("id"))
	}
	return m, r.end(false)
}

// Listed is one of an owner's pairs as the V-server holds it.
type Listed struct {
	ID        ID
	State     uint8 // PairAcked or PairUnacked; PairAcked in a version 1 List (which does not say)
	Value     []byte
	ACL       []string
	OwnerBlob []byte
}

// Pair states in a version 2 List.
const (
	PairAcked   = 0 // the K-server acknowledged the pair's chunk: on both servers
	PairUnacked = 1 // its chunk's relay got no answer: the V-server is removing it from both
)

// HeaderUnacked is set (value "settling") on the V-server's error answer to a publication
// whose chunk it stored but the K-server did not acknowledge: the pairs are listed as
// unacknowledged until the V-server has removed them from both servers.
const HeaderUnacked = "Veil-Peekaboo-Unacked"

// ListVersion2 is the List version that carries each pair's state; the V-server sends it
// to a client that asks with the query ListQuery (a version 1 List otherwise, which
// clients before it parse).
const (
	ListVersion2 = 2
	ListQuery    = "list_version=2"
)

// List answers `list`: the owner's pairs. Version is 1 (no pair states; 0 means 1) or 2.
type List struct {
	Version uint8
	Pairs   []Listed
}

func (m *List) Marshal() []byte {
	w := newMsg(TypeList)
	if m.Version == ListVersion2 {
		w.b[0] = ListVersion2
	}
	w.u32(uint32(len(m.Pairs)))
	for _, p := range m.Pairs {
		w.raw(p.ID[:])
		if m.Version == ListVersion2 {
			w.u8(p.State)
		}
		w.b16(p.Value)
		w.names(p.ACL)
		w.b16(p.OwnerBlob)
	}
	return w.b
}

// ParseList reads a version 1 or 2 List.
func ParseList(b []byte) (*List, error) {
	r := newReader("list reply", b)
	m := &List{Version: r.u8("version")}
	if r.err == nil && m.Version != Version && m.Version != ListVersion2 {
		r.fail("version %d, want %d or %d", m.Version, Version, ListVersion2)
	}
	if t := r.u8("type"); r.err == nil && t != TypeList {
		r.fail("type 0x%02x, want 0x%02x", t, TypeList)
	}
	n := r.count("pairs", MaxListed, IDSize+5)
	for i := 0; i < n && r.err == nil; i++ {
		p := Listed{ID: r.id("id")}
		if m.Version == ListVersion2 {
			if p.State = r.u8("state"); r.err == nil && p.State > PairUnacked {
				r.fail("pair %d: state %d", i, p.State)
			}
		}
		p.Value, p.ACL = r.b16("value"), r.names("acl")
		p.OwnerBlob = r.b16("owner blob")
		m.Pairs = append(m.Pairs, p)
	}
	return m, r.end(false)
}
