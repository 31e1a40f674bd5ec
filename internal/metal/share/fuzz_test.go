package share

import (
	"bytes"
	"testing"
)

// FuzzParseAnonym: the binary and text parsers never panic, accept only AnonymLen-byte
// version-1 anonyms, and re-encode what they accept byte for byte.
func FuzzParseAnonym(f *testing.F) {
	f.Add(bytes.Repeat([]byte{1}, AnonymLen))
	f.Add(append([]byte{1}, make([]byte, AnonymLen-1)...))
	f.Add([]byte("veil-anonym-AQID"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, err := ParseAnonym(b); err == nil {
			if !bytes.Equal(a.Marshal(), b) {
				t.Fatal("binary anonym does not re-encode to its bytes")
			}
			if _, err := ParseAnonymText(a.String()); err != nil {
				t.Fatal(err)
			}
		}
		if a, err := ParseAnonymText(string(b)); err == nil && len(a.Marshal()) != AnonymLen {
			t.Fatal("text anonym of the wrong size")
		}
	})
}

// FuzzParseListReply: never panics; what it accepts re-encodes to the same bytes.
func FuzzParseListReply(f *testing.F) {
	f.Add(EncodeListReply(0, 0, nil))
	f.Add(EncodeListReply(1, 5, bytes.Repeat([]byte{7}, 2*EntryLen)))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseListReply(b)
		if err != nil {
			return
		}
		if !bytes.Equal(EncodeListReply(r.First, r.Next, bytes.Join(r.Entries, nil)), b) {
			t.Fatal("accepted list reply does not re-encode to its bytes")
		}
	})
}

// FuzzOpenEntry: an arbitrary entry under a fixed key never panics and (with
// overwhelming probability) does not open.
func FuzzOpenEntry(f *testing.F) {
	f.Add(make([]byte, EntryLen))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var bk [16]byte
		if _, ok, _ := OpenEntry(bk, b); ok {
			t.Fatal("a fuzzed entry opened")
		}
	})
}
