package wire

import (
	"fmt"
	"regexp"
)

// Message types (second byte of every message).
const (
	TypeSearch    = 0x10
	TypeResults   = 0x11
	TypePublish   = 0x12
	TypeCount     = 0x13
	TypeUnpublish = 0x14
	TypeList      = 0x16
	TypeRelay     = 0x20
	TypeRelayResp = 0x21
)

// Limits on client messages.
const (
	MaxValue     = 1024 // bytes of a value
	MaxOwnerBlob = 512  // bytes of an owner blob
	MaxACL       = 16   // client names per pair
	MaxSealed    = 16 << 10
	MaxListed    = 1 << 22
	MaxUnpublish = 1 << 20
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckName validates a user name.
func CheckName(n string) error {
	if !nameRE.MatchString(n) {
		return fmt.Errorf("user name %q: want [a-z0-9][a-z0-9._-]{0,63}", n)
	}
	return nil
}

// Search is a client's search request: the sealed query only.
type Search struct{ Sealed []byte }

func (m *Search) Marshal() []byte {
	w := newMsg(TypeSearch)
	w.b32(m.Sealed)
	return w.b
}

func ParseSearch(b []byte) (*Search, error) {
	r := newReader("search request", b)
	r.header(TypeSearch)
	m := &Search{Sealed: r.b32("sealed query")}
	if r.err == nil && len(m.Sealed) > MaxSealed {
		r.fail("sealed query of %d bytes", len(m.Sealed))
	}
	return m, r.end(false)
}

// Result is one search result as the client receives it.
type Result struct {
	ID    ID
	Match []byte // match record under the one-time key
	Value []byte
}

// Search reply statuses: the K-server's verdict on the query (never about authorisation).
const (
	StatusOK        = 0
	StatusNotOpened = 1 // the sealed query did not open
	StatusReplay    = 2 // nonce seen before
	StatusStale     = 3 // timestamp outside the window
	StatusMalformed = 4
	StatusInternal  = 5
)

// Results is the V-server's reply to a search, padded to a size class.
type Results struct {
	Status  uint8
	Results []Result
}

// SizeClass returns the padded size for n bytes: 1 KiB x 4^i.
func SizeClass(n int) int {
	c := 1024
	for c < n {
		c *= 4
	}
	return c
}

func (m *Results) Marshal() []byte {
	w := newMsg(TypeResults)
	w.u8(m.Status)
	w.u16(uint16(len(m.Results)))
	for _, r := range m.Results {
		w.raw(r.ID[:])
		w.b16(r.Match)
		w.b16(r.Value)
	}
	w.b = append(w.b, make([]byte, SizeClass(len(w.b))-len(w.b))...)
	return w.b
}

func ParseResults(b []byte) (*Results, error) {
	r := newReader("search results", b)
	if len(b) != SizeClass(len(b)) {
		r.fail("%d bytes is not a size class", len(b))
	}
	r.header(TypeResults)
	m := &Results{Status: r.u8("status")}
	n := int(r.u16("count"))
	if r.err == nil && n > MaxLimit {
		r.fail("%d results, at most %d", n, MaxLimit)
	}
	for i := 0; i < n && r.err == nil; i++ {
		res := Result{ID: r.id("id"), Match: r.b16("match"), Value: r.b16("value")}
		m.Results = append(m.Results, res)
	}
	return m, r.endPadded(SizeClass)
}
