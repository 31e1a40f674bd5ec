package kswire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/oprf"
	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../testdata/ks/wire.json"

// detReader is a deterministic byte stream for vectors: SHA-256(label || counter).
type detReader struct {
	label string
	n     uint64
	buf   []byte
}

func (r *detReader) Read(p []byte) (int, error) {
	for i := range p {
		if len(r.buf) == 0 {
			h := sha256.Sum256(binary.BigEndian.AppendUint64([]byte(r.label), r.n))
			r.n++
			r.buf = h[:]
		}
		p[i], r.buf = r.buf[0], r.buf[1:]
	}
	return len(p), nil
}

type suiteVector struct {
	Suite    string   `json:"suite"`
	Private  string   `json:"private_key"`
	Public   string   `json:"public_key"`
	KeyID    string   `json:"key_id"`
	Inputs   []string `json:"inputs"`
	Request  string   `json:"request"`  // blinded with detReader("veil-ks-v1 vector blind")
	Response string   `json:"response"` // as the server answered when generated
	Keys     []string `json:"keys"`
}

type failVector struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"` // request, response, grant, datagram
	Hex   string `json:"hex"`
	Error string `json:"error"` // the sentinel the parser must return
}

type vectors struct {
	Comment  string        `json:"comment"`
	Suites   []suiteVector `json:"suites"`
	Grant    string        `json:"grant"`
	Datagram string        `json:"datagram"`
	// ErrorDatagram is the key server's answer to that request had it held more inputs
	// than its MaxBatch: an error datagram with code 0x05 (session 14).
	ErrorDatagram string       `json:"error_datagram"`
	MustFail      []failVector `json:"must_fail"`
	Generated     string       `json:"generated"`
}

func h(b []byte) string { return hex.EncodeToString(b) }

func vectorGrant() *Grant {
	g := &Grant{Expiry: time.Unix(1_800_000_000, 0), MaxDatagram: 8192}
	for i := range g.ID {
		g.ID[i] = byte(i)
	}
	for i := range g.MACKey {
		g.MACKey[i] = byte(0xa0 + i)
	}
	return g
}

func blindVector(t *testing.T, pub oprf.PublicKey, inputs [][]byte) (*oprf.Blinded, []byte) {
	t.Helper()
	bl, err := pub.Blind(&detReader{label: "veil-ks-v1 vector blind"}, inputs)
	if err != nil {
		t.Fatal(err)
	}
	req, err := AppendRequest(nil, &Request{Suite: pub.Suite(), KeyID: pub.ID(), Elements: bl.Elements})
	if err != nil {
		t.Fatal(err)
	}
	return bl, req
}

func generate(t *testing.T) *vectors {
	v := &vectors{Comment: "veil key server wire vectors; see docs/formats/ks-wire.md", Generated: "go test ./internal/kswire -run Vectors -update"}
	for _, s := range []oprf.SuiteID{oprf.Ristretto255, oprf.RSA} {
		k, err := oprf.GenerateKey(s, &detReader{label: "veil-ks-v1 vector key " + s.String()}, 2048)
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := k.MarshalBinary()
		pk, _ := k.Public().MarshalBinary()
		inputs := [][]byte{}
		sv := suiteVector{Suite: s.String(), Private: h(sk), Public: h(pk), KeyID: k.ID().String()}
		for i := range 3 {
			d := sha256.Sum256([]byte{byte(i)})
			inputs = append(inputs, d[:])
			sv.Inputs = append(sv.Inputs, h(d[:]))
		}
		bl, req := blindVector(t, k.Public(), inputs)
		ev, proof, err := k.Evaluate(bl.Elements)
		if err != nil {
			t.Fatal(err)
		}
		resp, _ := AppendResponse(nil, &Response{Suite: s, KeyID: k.ID(), Evals: ev, Proof: proof})
		keys, err := k.Public().Finalize(bl, ev, proof)
		if err != nil {
			t.Fatal(err)
		}
		sv.Request, sv.Response = h(req), h(resp)
		for _, key := range keys {
			sv.Keys = append(sv.Keys, h(key[:]))
		}
		v.Suites = append(v.Suites, sv)
	}
	g := vectorGrant()
	v.Grant = h(AppendGrant(nil, g))
	v.Datagram = h(AppendDatagram(nil, &Datagram{Type: TypeRequest, Session: g.ID, Seq: 7, Body: testutil.Unhex(t, v.Suites[0].Request)}, &g.MACKey))
	v.ErrorDatagram = h(AppendDatagram(nil, &Datagram{Type: TypeError, Session: g.ID, Seq: 7, Body: []byte{CodeBatchTooLarge}}, &g.MACKey))
	dg := testutil.Unhex(t, v.Datagram)
	flip := func(b []byte, i int) []byte { c := bytes.Clone(b); c[i] ^= 1; return c }
	req := testutil.Unhex(t, v.Suites[0].Request)
	resp := testutil.Unhex(t, v.Suites[0].Response)
	v.MustFail = []failVector{
		{"request: empty", "request", "", "malformed"},
		{"request: version 2", "request", h(append([]byte{2}, req[1:]...)), "malformed"},
		{"request: unknown suite 9", "request", h(append([]byte{1, 9}, req[2:]...)), "malformed"},
		{"request: count 0", "request", h(append(append(bytes.Clone(req[:10]), 0, 0), req[12:]...)), "malformed"},
		{"request: body not a multiple of count", "request", h(req[:len(req)-1]), "malformed"},
		{"response: one byte short", "response", h(resp[:len(resp)-1]), "malformed"},
		{"response: count 2 for 3", "response", h(append(append(bytes.Clone(resp[:10]), 0, 2), resp[12:]...)), "malformed"},
		{"response: flipped proof", "response", h(flip(resp, len(resp)-5)), "verify"},
		{"response: flipped evaluation", "response", h(flip(resp, 20)), "verify"},
		{"grant: short", "grant", v.Grant[:100], "malformed"},
		{"datagram: flipped body bit", "datagram", h(flip(dg, 40)), "forged"},
		{"datagram: flipped sequence", "datagram", h(flip(dg, 25)), "forged"},
		{"datagram: truncated", "datagram", h(dg[:40]), "malformed"},
	}
	return v
}

func TestVectors(t *testing.T) {
	var v vectors
	testutil.Vectors(t, vectorFile, &v, func() any { return generate(t) })
	var r255 oprf.PublicKey
	for _, sv := range v.Suites {
		s, _ := oprf.ParseSuite(sv.Suite)
		k, err := oprf.ParsePrivateKey(s, testutil.Unhex(t, sv.Private))
		if err != nil {
			t.Fatal(err)
		}
		if pk, _ := k.Public().MarshalBinary(); !bytes.Equal(pk, testutil.Unhex(t, sv.Public)) || k.ID().String() != sv.KeyID {
			t.Fatalf("%s: public key or key id differs", sv.Suite)
		}
		if s == oprf.Ristretto255 {
			r255 = k.Public()
		}
		var inputs [][]byte
		for _, in := range sv.Inputs {
			inputs = append(inputs, testutil.Unhex(t, in))
		}
		bl, req := blindVector(t, k.Public(), inputs)
		if !bytes.Equal(req, testutil.Unhex(t, sv.Request)) {
			t.Fatalf("%s: request encoding differs from the vector", sv.Suite)
		}
		resp := testutil.Unhex(t, sv.Response)
		parsed, err := ParseResponse(resp, k.Public(), len(inputs))
		if err != nil {
			t.Fatal(err)
		}
		if re, _ := AppendResponse(nil, parsed); !bytes.Equal(re, resp) {
			t.Fatalf("%s: response does not re-encode byte for byte", sv.Suite)
		}
		keys, err := k.Public().Finalize(bl, parsed.Evals, parsed.Proof)
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range keys {
			if h(key[:]) != sv.Keys[i] {
				t.Fatalf("%s: key %d differs from the vector", sv.Suite, i)
			}
		}
		if s == oprf.RSA { // deterministic signatures: the server's answer is reproducible
			ev, _, _ := k.Evaluate(bl.Elements)
			if re, _ := AppendResponse(nil, &Response{Suite: s, KeyID: k.ID(), Evals: ev}); !bytes.Equal(re, resp) {
				t.Fatal("rsa: evaluation differs from the vector")
			}
		}
	}
	g := vectorGrant()
	if h(AppendGrant(nil, g)) != v.Grant {
		t.Fatal("grant encoding differs")
	}
	if pg, err := ParseGrant(testutil.Unhex(t, v.Grant)); err != nil || *pg != *g {
		t.Fatalf("grant does not parse back: %v", err)
	}
	d, err := OpenDatagram(testutil.Unhex(t, v.Datagram), &g.MACKey)
	if err != nil || d.Seq != 7 || d.Session != g.ID || h(d.Body) != v.Suites[0].Request {
		t.Fatalf("datagram: %v", err)
	}
	if h(AppendDatagram(nil, d, &g.MACKey)) != v.Datagram {
		t.Fatal("datagram encoding differs")
	}
	ed := &Datagram{Type: TypeError, Session: g.ID, Seq: 7, Body: []byte{CodeBatchTooLarge}}
	if h(AppendDatagram(nil, ed, &g.MACKey)) != v.ErrorDatagram {
		t.Fatal("error datagram (batch too large) encoding differs")
	}
	if d, err := OpenDatagram(testutil.Unhex(t, v.ErrorDatagram), &g.MACKey); err != nil || d.Type != TypeError || !bytes.Equal(d.Body, []byte{0x05}) {
		t.Fatalf("error datagram: %v", err)
	}
	for _, f := range v.MustFail {
		b := testutil.Unhex(t, f.Hex)
		var err error
		switch f.Kind {
		case "request":
			_, err = ParseRequest(b)
		case "grant":
			_, err = ParseGrant(b)
		case "datagram":
			_, err = OpenDatagram(b, &g.MACKey)
		case "response":
			var p *Response
			if p, err = ParseResponse(b, r255, 3); err == nil {
				inputs := [][]byte{}
				for _, in := range v.Suites[0].Inputs {
					inputs = append(inputs, testutil.Unhex(t, in))
				}
				bl, _ := blindVector(t, r255, inputs)
				_, err = r255.Finalize(bl, p.Evals, p.Proof)
			}
		}
		want := map[string]error{"malformed": ErrMalformed, "verify": oprf.ErrVerify, "forged": ErrForged}[f.Error]
		if !errors.Is(err, want) {
			t.Fatalf("%s: got %v, want %v", f.Name, err, want)
		}
	}
}
