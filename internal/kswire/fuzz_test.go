package kswire

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/veil-project/veil/internal/oprf"
)

// seeds adds every vector (valid and must-fail) of the given kind to the corpus.
func seeds(f *testing.F, kind string) {
	b, err := os.ReadFile(vectorFile)
	if err != nil {
		f.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		f.Fatal(err)
	}
	add := func(s string) {
		if b, err := hex.DecodeString(s); err == nil {
			f.Add(b)
		}
	}
	for _, s := range v.Suites {
		switch kind {
		case "request":
			add(s.Request)
		case "response":
			add(s.Response)
		}
	}
	switch kind {
	case "grant":
		add(v.Grant)
	case "datagram":
		add(v.Datagram)
	}
	for _, m := range v.MustFail {
		if m.Kind == kind {
			add(m.Hex)
		}
	}
}

func FuzzParseRequest(f *testing.F) {
	seeds(f, "request")
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRequest(b)
		if err != nil {
			return
		}
		out, err := AppendRequest(nil, r)
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("accepted request does not re-encode: %v", err)
		}
	})
}

func FuzzParseResponse(f *testing.F) {
	seeds(f, "response")
	b, _ := os.ReadFile(vectorFile)
	var v vectors
	json.Unmarshal(b, &v)
	raw, _ := hex.DecodeString(v.Suites[0].Public)
	pub, err := oprf.ParsePublicKey(oprf.Ristretto255, raw)
	if err != nil {
		f.Fatal(err)
	}
	bl, _ := pub.Blind(&detReader{label: "fuzz"}, [][]byte{{1}, {2}, {3}})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseResponse(b, pub, 3)
		if err != nil {
			return
		}
		if out, _ := AppendResponse(nil, r); !bytes.Equal(out, b) {
			t.Fatal("accepted response does not re-encode")
		}
		pub.Finalize(bl, r.Evals, r.Proof) // must not panic; almost always ErrVerify
	})
}

func FuzzParseGrant(f *testing.F) {
	seeds(f, "grant")
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGrant(b)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendGrant(nil, g), b) {
			t.Fatal("accepted grant does not re-encode")
		}
	})
}

func FuzzOpenDatagram(f *testing.F) {
	seeds(f, "datagram")
	g := vectorGrant()
	f.Fuzz(func(t *testing.T, b []byte) {
		PeekSession(b)
		d, err := OpenDatagram(b, &g.MACKey)
		if err != nil {
			return
		}
		if !bytes.Equal(AppendDatagram(nil, d, &g.MACKey), b) {
			t.Fatal("accepted datagram does not re-encode")
		}
	})
}

func FuzzParseCredential(f *testing.F) {
	b, err := os.ReadFile("../../testdata/ks/credential.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"suite":"rsa","keys":[{"id":"00","public":"AA=="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseCredential(b)
	})
}
