package wire

import (
	"bytes"
	"errors"
	"sort"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

func parserNames() []string {
	var names []string
	for n := range parsers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// FuzzParse feeds every parser (selected by the first byte): it must return a value that
// re-encodes to the input, or ErrMalformed; never panic.
func FuzzParse(f *testing.F) {
	names := parserNames()
	for _, e := range samples() {
		p := e.Name[:bytes.IndexByte([]byte(e.Name), ':')]
		i := sort.SearchStrings(names, p)
		f.Add(append([]byte{byte(i)}, testutil.Unhex(f, e.Hex)...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		name := names[int(b[0])%len(names)]
		in := b[1:]
		re, err := parsers[name](in)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: error not ErrMalformed: %v", name, err)
			}
			return
		}
		// Padded formats accept trailing zeros the encoder re-creates; others re-encode exactly.
		if !bytes.Equal(re, in) {
			t.Fatalf("%s: accepted input does not re-encode to itself", name)
		}
	})
}

// FuzzOpen feeds the K-server's openers with attacker bytes.
func FuzzOpen(f *testing.F) {
	k := mustKey(f)
	q, _ := SealQuery(k.Public(), sampleQuery())
	c, _ := SealChunk(k.Public(), []KeyItem{{ID: sampleID(1), Key: "a"}})
	f.Add(q)
	f.Add(MarshalChunk(c))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := OpenQuery(k, b); err == nil && !bytes.Equal(b, q) {
			t.Fatal("altered query opened")
		}
		if c, err := ParseChunk(b); err == nil {
			if _, err := OpenChunk(k, c); err == nil && !bytes.Equal(b, MarshalChunk(c)) {
				t.Fatal("altered chunk opened")
			}
		}
	})
}
