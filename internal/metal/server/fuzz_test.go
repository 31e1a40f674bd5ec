package server

import (
	"bytes"
	"testing"
)

// FuzzParseAsk: Server 2's parser of Server 1's announcements and queries never panics,
// accepts only whole entries of known call kinds, and what it accepts re-encodes to the
// same bytes; the answer check accepts exactly n bytes of 0, 1 or 2.
func FuzzParseAsk(f *testing.F) {
	one := announce{kind: kindAccess, id: [idLen]byte{1, 2, 3}}
	f.Add(one.marshal())
	f.Add(marshalQuery([]announce{one, {kind: kindAccount}}))
	f.Add([]byte{kindQuery})
	f.Add([]byte{kindPing})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if as, err := parseAsk(b); err == nil {
			re := marshalQuery(as)
			if b[0] != kindQuery {
				if len(as) != 1 {
					t.Fatalf("an announcement of %d ids", len(as))
				}
				re = as[0].marshal()
			}
			if !bytes.Equal(re, b) {
				t.Fatal("an accepted message does not re-encode to its bytes")
			}
		}
		ok := true
		for _, a := range b {
			ok = ok && a <= answerNotYet
		}
		if err := checkAnswers(b, len(b)); (err == nil) != ok {
			t.Fatalf("answers %x: %v", b, err)
		}
		if len(b) > 0 && checkAnswers(b[1:], len(b)) == nil {
			t.Fatal("a short answer accepted")
		}
	})
}
