package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every parse error.
var ErrMalformed = errors.New("malformed peekaboo message")

// Version is the format version byte of every message and record but the two plaintexts
// sealed to the K-server, which carry their own (QueryVersion, KeyItemVersion).
const Version = 1

// IDSize is the size of a pair id.
const IDSize = 16

// ID is a pair id: 16 random bytes chosen by the owner.
type ID [IDSize]byte

type writer struct{ b []byte }

// newMsg starts a message or record: version byte, type byte.
func newMsg(typ uint8) *writer { return &writer{b: []byte{Version, typ}} }

// names writes a list of names: u8 n, n x b8 name (ACLs).
func (w *writer) names(ns []string) {
	w.u8(uint8(len(ns)))
	for _, n := range ns {
		w.b8([]byte(n))
	}
}

// b16s writes u32 n, n x b16 (sealed items, grants).
func (w *writer) b16s(list [][]byte) {
	w.u32(uint32(len(list)))
	for _, p := range list {
		w.b16(p)
	}
}

// tagged writes u16 n, n x (u8 tag, b32 payload): relay batches and their replies.
func (w *writer) tagged(n int, at func(i int) (uint8, []byte)) {
	w.u16(uint16(n))
	for i := 0; i < n; i++ {
		tag, p := at(i)
		w.u8(tag)
		w.b32(p)
	}
}

func (w *writer) u8(v uint8)   { w.b = append(w.b, v) }
func (w *writer) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *writer) u32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *writer) raw(p []byte) { w.b = append(w.b, p...) }
func (w *writer) b8(p []byte)  { w.u8(uint8(len(p))); w.raw(p) }
func (w *writer) b16(p []byte) { w.u16(uint16(len(p))); w.raw(p) }
func (w *writer) b32(p []byte) { w.u32(uint32(len(p))); w.raw(p) }

// padTo appends zeros until len is a multiple of m.
func (w *writer) padTo(m int) {
	if r := len(w.b) % m; r != 0 {
		w.b = append(w.b, make([]byte, m-r)...)
	}
}

// fill appends zeros up to exactly n bytes (a fixed-size format). The content must fit:
// callers check the limits that make it fit first, so more is a bug in this package.
func (w *writer) fill(n int) {
	if len(w.b) > n {
		panic(fmt.Sprintf("wire: %d bytes of content exceed the fixed size %d", len(w.b), n))
	}
	w.b = append(w.b, make([]byte, n-len(w.b))...)
}

// reader consumes a message; the first error sticks and later reads return zero values.
type reader struct {
	b     []byte
	total int
	err   error
	what  string
}

func newReader(what string, b []byte) *reader { return &reader{b: b, total: len(b), what: what} }

func (r *reader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s", ErrMalformed, r.what, fmt.Sprintf(format, a...))
	}
}

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.fail("truncated at %s", field)
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8(f string) uint8 {
	if p := r.take(1, f); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16(f string) uint16 {
	if p := r.take(2, f); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (r *reader) u32(f string) uint32 {
	if p := r.take(4, f); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (r *reader) u64(f string) uint64 {
	if p := r.take(8, f); p != nil {
		return binary.BigEndian.Uint64(p)
	}
	return 0
}

func (r *reader) b8(f string) []byte  { return r.take(int(r.u8(f)), f) }
func (r *reader) b16(f string) []byte { return r.take(int(r.u16(f)), f) }
func (r *reader) b32(f string) []byte { return r.take(int(r.u32(f)), f) }

// names reads what writer.names wrote.
func (r *reader) names(f string) []string {
	var out []string
	n := int(r.u8(f))
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, string(r.b8(f)))
	}
	return out
}

// b16s reads what writer.b16s wrote, at most max elements.
func (r *reader) b16s(f string, max int) [][]byte {
	n := r.count(f, max, 2)
	var out [][]byte
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.b16(f))
	}
	return out
}

// tagged reads what writer.tagged wrote, calling each for every (tag, payload).
func (r *reader) tagged(f string, each func(i int, tag uint8, p []byte)) int {
	n := int(r.u16(f))
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.u8("kind")
		p := r.b32("payload")
		if r.err == nil {
			each(i, tag, p)
		}
	}
	return n
}

func (r *reader) id(f string) (id ID) {
	copy(id[:], r.take(IDSize, f))
	return id
}

// header checks the version and type bytes.
func (r *reader) header(typ uint8) {
	if v := r.u8("version"); r.err == nil && v != Version {
		r.fail("version %d, want %d", v, Version)
	}
	if t := r.u8("type"); r.err == nil && t != typ {
		r.fail("type 0x%02x, want 0x%02x", t, typ)
	}
}

// count reads a u32 element count and checks it against max and the bytes left (each
// element takes at least min bytes), so a forged count cannot make the parser allocate.
func (r *reader) count(f string, max, min int) int {
	n := int(r.u32(f))
	if r.err == nil && (n > max || n*min > len(r.b)) {
		r.fail("%s %d out of range", f, n)
		return 0
	}
	return n
}

// end requires that nothing, or only zero padding when zeros is set, remains.
func (r *reader) end(zeros bool) error {
	if r.err != nil {
		return r.err
	}
	for _, c := range r.b {
		if !zeros || c != 0 {
			r.fail("%d trailing bytes", len(r.b))
			break
		}
	}
	return r.err
}

// endPadded requires zero padding and that the message has the canonical padded length
// padded(bytes used), so every accepted message re-encodes to itself.
func (r *reader) endPadded(padded func(int) int) error {
	used := r.total - len(r.b)
	if r.err == nil && padded(used) != r.total {
		r.fail("%d bytes, want %d for its content", r.total, padded(used))
	}
	return r.end(true)
}
