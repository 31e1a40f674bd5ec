package wire

// Relay item kinds.
const (
	KindQuery     = 1 // payload: a sealed query
	KindPublish   = 2 // payload: MarshalChunk
	KindUnpublish = 3 // payload: IDs.Marshal
)

// Limits on relay messages.
const (
	MaxRelayItems   = 4096
	MaxRelayPayload = 32 << 20
)

// RelayItem is one item the V-server forwards: no identity, only the sealed bytes.
type RelayItem struct {
	Kind    uint8
	Payload []byte
}

// Relay is a mixed batch from the V-server to the K-server.
type Relay struct{ Items []RelayItem }

func (m *Relay) Marshal() []byte {
	w := newMsg(TypeRelay)
	w.tagged(len(m.Items), func(i int) (uint8, []byte) { return m.Items[i].Kind, m.Items[i].Payload })
	return w.b
}

func ParseRelay(b []byte) (*Relay, error) {
	r := newReader("relay batch", b)
	r.header(TypeRelay)
	m := &Relay{}
	n := r.tagged("items", func(i int, kind uint8, p []byte) {
		if kind < KindQuery || kind > KindPIRSync {
			r.fail("item %d: kind %d", i, kind)
		}
		m.Items = append(m.Items, RelayItem{Kind: kind, Payload: p})
	})
	if r.err == nil && (n == 0 || n > MaxRelayItems) {
		r.fail("%d items: want 1..%d", n, MaxRelayItems)
	}
	return m, r.end(false)
}

// RelayResult is the K-server's answer to one relay item: a status (StatusOK, ...) and,
// when OK, a payload: Matches for a query, Count for a publication or unpublication.
type RelayResult struct {
	Status  uint8
	Payload []byte
}

// RelayResp answers a Relay, item for item in the same order.
type RelayResp struct{ Results []RelayResult }

func (m *RelayResp) Marshal() []byte {
	w := newMsg(TypeRelayResp)
	w.tagged(len(m.Results), func(i int) (uint8, []byte) { return m.Results[i].Status, m.Results[i].Payload })
	return w.b
}

func ParseRelayResp(b []byte) (*RelayResp, error) {
	r := newReader("relay reply", b)
	r.header(TypeRelayResp)
	m := &RelayResp{}
	r.tagged("items", func(i int, st uint8, p []byte) {
		if st > StatusInternal {
			r.fail("item %d: status %d", i, st)
		}
		m.Results = append(m.Results, RelayResult{Status: st, Payload: p})
	})
	return m, r.end(false)
}

// Matched is one match the K-server returns: the pair id and its match record.
type Matched struct {
	ID     ID
	Record []byte
}

// MarshalMatches encodes a query's OK payload: u16 n, n x (id, b16 record).
func MarshalMatches(ms []Matched) []byte {
	w := &writer{}
	w.u16(uint16(len(ms)))
	for _, m := range ms {
		w.raw(m.ID[:])
		w.b16(m.Record)
	}
	return w.b
}

func ParseMatches(b []byte) ([]Matched, error) {
	r := newReader("matches", b)
	n := int(r.u16("count"))
	if r.err == nil && n > MaxLimit {
		r.fail("%d matches, at most %d", n, MaxLimit)
	}
	out := make([]Matched, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, Matched{ID: r.id("id"), Record: r.b16("record")})
	}
	return out, r.end(false)
}

// MarshalN encodes a u32 count payload.
func MarshalN(n uint32) []byte {
	w := &writer{}
	w.u32(n)
	return w.b
}

func ParseN(b []byte) (uint32, error) {
	r := newReader("count", b)
	n := r.u32("count")
	return n, r.end(false)
}
