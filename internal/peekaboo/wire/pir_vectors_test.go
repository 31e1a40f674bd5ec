package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// testdata/peekaboo/pir-wire.json pins the private-query messages
// (docs/formats/peekaboo-wire.md, "Private queries"): encodings, a sealed PIR query under
// the vector K-server key (opened, not re-sealed), a sealed answer, and inputs every
// parser must refuse.

const pirVectorFile = "../../../testdata/peekaboo/pir-wire.json"

type pirVectors struct {
	Encodings []encVec    `json:"encodings"`
	Sealed    []sealedVec `json:"sealed"`
	Answer    struct {
		Plain  string `json:"plain"`
		Sealed string `json:"sealed"`
	} `json:"answer"`
	MustFail []failVec `json:"must_fail"`
}

func init() {
	parsers["pir_query"] = func(b []byte) ([]byte, error) {
		q, err := ParsePIRQuery(b)
		if err != nil {
			return nil, err
		}
		return MarshalPIRQuery(q)
	}
	parsers["pir_search"] = func(b []byte) ([]byte, error) { m, err := ParsePIRSearch(b); return marshalOr(m, err) }
	parsers["pir_reply"] = func(b []byte) ([]byte, error) { m, err := ParsePIRReply(b); return marshalOr(m, err) }
	parsers["fetch"] = func(b []byte) ([]byte, error) { m, err := ParseFetch(b); return marshalOr(m, err) }
	parsers["publish_ack"] = func(b []byte) ([]byte, error) { m, err := ParsePublishAck(b); return marshalOr(m, err) }
	parsers["pir_sync"] = func(b []byte) ([]byte, error) { m, err := ParsePIRSync(b); return marshalOr(m, err) }
}

func samplePIRQuery() *PIRQuery {
	q := &PIRQuery{Time: 1_790_000_000_000, DPFKey: bytes.Repeat([]byte{0xd0}, 103)}
	for i := range q.OneTimeKey {
		q.OneTimeKey[i] = 0x30 + byte(i)
	}
	for i := range q.Nonce {
		q.Nonce[i] = 0xb0 + byte(i)
	}
	return q
}

func pirSamples() []encVec {
	pq, _ := MarshalPIRQuery(samplePIRQuery())
	search := &PIRSearch{Key0: []byte{1, 0, 12}, Sealed: make([]byte, SealedPIRQuerySize())}
	var e PIREntry
	e.Placed = true
	for i := range e.Entry {
		e.Entry[i] = byte(i)
	}
	return []encVec{
		{"pir_query:one", hex.EncodeToString(pq)},
		{"pir_search:zero-sealed", hex.EncodeToString(search.Marshal())},
		{"pir_reply:ok", hex.EncodeToString((&PIRReply{Share0: []byte{1, 2}, Sealed1: []byte{3}}).Marshal())},
		{"pir_reply:replay", hex.EncodeToString((&PIRReply{Status: StatusReplay}).Marshal())},
		{"fetch:two", hex.EncodeToString((&Fetch{IDs: []ID{sampleID(1), sampleID(2)}}).Marshal())},
		{"fetch:none", hex.EncodeToString((&Fetch{}).Marshal())},
		{"publish_ack:no-table", hex.EncodeToString((&PublishAck{N: 3}).Marshal())},
		{"publish_ack:two", hex.EncodeToString((&PublishAck{N: 2, Entries: []PIREntry{e, {}}}).Marshal())},
		{"pir_sync:two-buckets", hex.EncodeToString((&PIRSync{Buckets: []SyncBucket{{Index: 7, Entries: []SyncEntry{{ID: sampleID(3), Entry: e.Entry}}}, {Index: 9}}}).Marshal())},
		{"pir_sync:none", hex.EncodeToString((&PIRSync{}).Marshal())},
	}
}

func pirMustFail() []failVec {
	pq, _ := MarshalPIRQuery(samplePIRQuery())
	long := bytes.Clone(pq)
	long = append(long, 0)
	pad := bytes.Clone(pq)
	pad[len(pad)-1] = 1
	fetch := (&Fetch{IDs: []ID{sampleID(1)}}).Marshal()
	fpad := bytes.Clone(fetch)
	fpad[len(fpad)-1] = 9
	return []failVec{
		{"pir query 513 bytes", "pir_query", hex.EncodeToString(long)},
		{"pir query nonzero padding", "pir_query", hex.EncodeToString(pad)},
		{"pir search short sealed part", "pir_search", "011a000301000c000100"},
		{"pir reply unknown status", "pir_reply", "011b09" + "00000000" + "00000000"},
		{"fetch not padded", "fetch", "011c00"},
		{"fetch nonzero padding", "fetch", hex.EncodeToString(fpad)},
		{"publish ack entries for the wrong count", "publish_ack", "0000000201" + "01" + hex.EncodeToString(make([]byte, PIREntrySize))},
		{"pir sync forged bucket count", "pir_sync", "ffffffff"},
		{"pir sync entry truncated", "pir_sync", "00000001" + "00000007" + "00000001" + "00"},
		{"publish ack entries flag without pairs", "publish_ack", "0000000001"},
		{"publish ack placed 2", "publish_ack", "0000000101" + "02" + hex.EncodeToString(make([]byte, PIREntrySize))},
	}
}

func generatePIR(t testing.TB) func() any {
	return func() any {
		k := mustKey(t)
		v := pirVectors{Encodings: pirSamples(), MustFail: pirMustFail()}
		q := samplePIRQuery()
		s, err := SealPIRQuery(k.Public(), q)
		if err != nil {
			t.Fatal(err)
		}
		pt, _ := MarshalPIRQuery(q)
		bad := bytes.Clone(s)
		bad[len(bad)-40] ^= 1
		v.Sealed = []sealedVec{{"pir-query", hex.EncodeToString(s), hex.EncodeToString(pt)}, {"pir-query-altered", hex.EncodeToString(bad), ""}}
		ans := []byte("an answer share")
		v.Answer.Plain, v.Answer.Sealed = hex.EncodeToString(ans), hex.EncodeToString(SealPIRAnswer(q, ans))
		return v
	}
}

func TestPIRVectors(t *testing.T) {
	var v pirVectors
	testutil.Vectors(t, pirVectorFile, &v, generatePIR(t))
	want := pirSamples()
	if len(v.Encodings) != len(want) || len(v.Sealed) != 2 || len(v.MustFail) == 0 {
		t.Fatal("vector file does not match the samples")
	}
	for i, e := range v.Encodings {
		if e != want[i] {
			t.Errorf("%s: encoding differs from the vector", e.Name)
		}
		parser := e.Name[:bytes.IndexByte([]byte(e.Name), ':')]
		b := testutil.Unhex(t, e.Hex)
		if re, err := parsers[parser](b); err != nil || !bytes.Equal(re, b) {
			t.Errorf("%s: parse+marshal: %v", e.Name, err)
		}
	}
	k := mustKey(t)
	for _, s := range v.Sealed {
		q, err := OpenPIRQuery(k, testutil.Unhex(t, s.Sealed))
		if s.Plain == "" {
			if !errors.Is(err, ErrOpen) {
				t.Errorf("%s: %v, want ErrOpen", s.Name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if pt, _ := MarshalPIRQuery(q); hex.EncodeToString(pt) != s.Plain {
			t.Errorf("%s: plaintext differs", s.Name)
		}
	}
	q := samplePIRQuery()
	if got := hex.EncodeToString(SealPIRAnswer(q, testutil.Unhex(t, v.Answer.Plain))); got != v.Answer.Sealed {
		t.Error("sealed answer differs from the vector")
	}
	sealed := testutil.Unhex(t, v.Answer.Sealed)
	if pt, err := OpenPIRAnswer(q, sealed); err != nil || hex.EncodeToString(pt) != v.Answer.Plain {
		t.Errorf("open answer: %v", err)
	}
	q.Nonce[0] ^= 1 // another query's answer
	if _, err := OpenPIRAnswer(q, sealed); !errors.Is(err, ErrOpen) {
		t.Errorf("answer opened under another query: %v", err)
	}
	for _, f := range v.MustFail {
		if _, err := parsers[f.Parser](testutil.Unhex(t, f.Hex)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", f.Name, err)
		}
	}
}

// FuzzOpenPIR feeds the K-server's PIR query opener with attacker bytes.
func FuzzOpenPIR(f *testing.F) {
	k := mustKey(f)
	var v pirVectors
	testutil.Vectors(f, pirVectorFile, &v, nil)
	good := testutil.Unhex(f, v.Sealed[0].Sealed)
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := OpenPIRQuery(k, b); err == nil && !bytes.Equal(b, good) {
			t.Fatal("altered pir query opened")
		}
	})
}

// FuzzParsePIR feeds the private-query parsers only (FuzzParse covers them too, among
// slower ones): a value that re-encodes to the input, or ErrMalformed.
func FuzzParsePIR(f *testing.F) {
	fuzzParsers(f, []string{"fetch", "pir_query", "pir_reply", "pir_search", "pir_sync", "publish_ack"}, pirSamples())
}
