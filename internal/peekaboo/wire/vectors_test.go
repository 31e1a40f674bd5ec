package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// The vector file testdata/peekaboo/wire.json pins every format byte for byte: encodings of
// fixed sample messages, sealed messages under a K-server key derived from a fixed ikm
// (opened, not re-sealed: HPKE is randomised), and inputs every parser must refuse.

const vectorFile = "../../../testdata/peekaboo/wire.json"

type encVec struct {
	Name string `json:"name"`
	Hex  string `json:"hex"`
}

type sealedVec struct {
	Name   string `json:"name"`
	Sealed string `json:"sealed"`
	Plain  string `json:"plain"` // the query or the concatenated item plaintexts; "" = must fail
}

type failVec struct {
	Name   string `json:"name"`
	Parser string `json:"parser"`
	Hex    string `json:"hex"`
}

type vectors struct {
	KServerIKM string      `json:"kserver_ikm"`
	KServerPub string      `json:"kserver_pub"`
	Encodings  []encVec    `json:"encodings"`
	Sealed     []sealedVec `json:"sealed"`
	MustFail   []failVec   `json:"must_fail"`
}

var testIKM = bytes.Repeat([]byte{0x42}, 64)

func sampleID(b byte) (id ID) {
	for i := range id {
		id[i] = b + byte(i)
	}
	return id
}

func sampleQuery() *Query {
	q := &Query{Mode: ModeSubstring, Advanced: true, Limit: 100, Time: 1_790_000_000_000, Text: "report.pdf"}
	for i := range q.OneTimeKey {
		q.OneTimeKey[i] = byte(i)
	}
	for i := range q.Nonce {
		q.Nonce[i] = 0xa0 + byte(i)
	}
	return q
}

// parsers re-encode what they parse, so a vector checks both directions.
var parsers = map[string]func([]byte) ([]byte, error){
	"search":  func(b []byte) ([]byte, error) { m, err := ParseSearch(b); return marshalOr(m, err) },
	"results": func(b []byte) ([]byte, error) { m, err := ParseResults(b); return marshalOr(m, err) },
	"publish": func(b []byte) ([]byte, error) { m, err := ParsePublish(b); return marshalOr(m, err) },
	"count":   func(b []byte) ([]byte, error) { m, err := ParseCount(b); return marshalOr(m, err) },
	"ids":     func(b []byte) ([]byte, error) { m, err := ParseIDs(b); return marshalOr(m, err) },
	"list":    func(b []byte) ([]byte, error) { m, err := ParseList(b); return marshalOr(m, err) },
	"relay":   func(b []byte) ([]byte, error) { m, err := ParseRelay(b); return marshalOr(m, err) },
	"relay_resp": func(b []byte) ([]byte, error) {
		m, err := ParseRelayResp(b)
		return marshalOr(m, err)
	},
	"query": func(b []byte) ([]byte, error) {
		q, err := ParseQuery(b)
		if err != nil {
			return nil, err
		}
		return MarshalQuery(q)
	},
	"key_item": func(b []byte) ([]byte, error) {
		it, err := ParseKeyItem(b)
		if err != nil {
			return nil, err
		}
		return MarshalKeyItem(it)
	},
	"chunk": func(b []byte) ([]byte, error) {
		c, err := ParseChunk(b)
		if err != nil {
			return nil, err
		}
		return MarshalChunk(c), nil
	},
	"matches": func(b []byte) ([]byte, error) {
		m, err := ParseMatches(b)
		if err != nil {
			return nil, err
		}
		return MarshalMatches(m), nil
	},
	"key_record": func(b []byte) ([]byte, error) {
		it, err := ParseKeyRecord(sampleID(0), b)
		if err != nil {
			return nil, err
		}
		return MarshalKeyRecord(it), nil
	},
	"pair_record": func(b []byte) ([]byte, error) {
		p, err := ParsePairRecord(b)
		if err != nil {
			return nil, err
		}
		return MarshalPairRecord(p), nil
	},
	"user_record": func(b []byte) ([]byte, error) {
		u, err := ParseUserRecord(b)
		if err != nil {
			return nil, err
		}
		return MarshalUserRecord(u), nil
	},
	"grant":  func(b []byte) ([]byte, error) { m, err := ParseGrant(b); return marshalOr(m, err) },
	"grants": func(b []byte) ([]byte, error) { m, err := ParseGrants(b); return marshalOr(m, err) },
	"kserver_pub": func(b []byte) ([]byte, error) {
		p, err := ParseKServerPub(b)
		if err != nil {
			return nil, err
		}
		return p.Marshal(), nil
	},
}

func marshalOr[T interface{ Marshal() []byte }](m T, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return m.Marshal(), nil
}

// samples are the encodings pinned by name (the name's prefix before ':' is its parser).
func samples() []encVec {
	q, _ := MarshalQuery(sampleQuery())
	item, _ := MarshalKeyItem(&KeyItem{ID: sampleID(1), Key: "holiday.jpg", Pseudonyms: [][32]byte{{7}}})
	res := &Results{Results: []Result{{ID: sampleID(2), Match: []byte{1, 2, 3}, Value: []byte("host-a:/srv")}}}
	pub := &Publish{Enc: []byte{9, 9}, Pairs: []PublishPair{{ID: sampleID(3), Value: []byte("v"), ACL: []string{"bob"}, OwnerBlob: []byte{5}, Sealed: []byte{6, 6}}}}
	list := &List{Pairs: []Listed{{ID: sampleID(4), Value: []byte("v"), ACL: []string{"carol", "dan"}, OwnerBlob: []byte{1}}}}
	listV2 := &List{Version: ListVersion2, Pairs: []Listed{{ID: sampleID(4), State: PairAcked, Value: []byte("v"), ACL: []string{"carol"}, OwnerBlob: []byte{1}},
		{ID: sampleID(9), State: PairUnacked, Value: []byte("w"), OwnerBlob: []byte{2}}}}
	relay := &Relay{Items: []RelayItem{{KindQuery, []byte{1}}, {KindUnpublish, (&IDs{IDs: []ID{sampleID(5)}}).Marshal()}}}
	resp := &RelayResp{Results: []RelayResult{{StatusOK, MarshalMatches([]Matched{{sampleID(6), []byte{8}}})}, {StatusReplay, nil}}}
	chunk := MarshalChunk(&SealedChunk{Enc: []byte{1, 2}, Items: [][]byte{{3}, {4, 5}}})
	user := &UserRecord{Admin: true}
	user.SecretHash[0] = 0xff
	return []encVec{
		{"query:substring-advanced", hex.EncodeToString(q)},
		{"key_item:with-pseudonym", hex.EncodeToString(item)},
		{"search:empty", hex.EncodeToString((&Search{Sealed: []byte{1, 2, 3}}).Marshal())},
		{"results:one", hex.EncodeToString(res.Marshal())},
		{"results:none", hex.EncodeToString((&Results{}).Marshal())},
		{"publish:one", hex.EncodeToString(pub.Marshal())},
		{"count:7", hex.EncodeToString((&Count{N: 7}).Marshal())},
		{"ids:two", hex.EncodeToString((&IDs{IDs: []ID{sampleID(7), sampleID(8)}}).Marshal())},
		{"list:one", hex.EncodeToString(list.Marshal())},
		{"relay:two", hex.EncodeToString(relay.Marshal())},
		{"relay_resp:two", hex.EncodeToString(resp.Marshal())},
		{"chunk:two", hex.EncodeToString(chunk)},
		{"key_record:one", hex.EncodeToString(MarshalKeyRecord(&KeyItem{Key: "k", Pseudonyms: [][32]byte{{1}}}))},
		{"pair_record:one", hex.EncodeToString(MarshalPairRecord(&PairRecord{Owner: "alice", Value: []byte("v"), ACL: []string{"bob"}, OwnerBlob: []byte{2}}))},
		{"user_record:admin", hex.EncodeToString(MarshalUserRecord(user))},
		{"grant:one", hex.EncodeToString((&Grant{To: "bob", Sealed: []byte{1, 2}}).Marshal())},
		{"grants:two", hex.EncodeToString((&Grants{Sealed: [][]byte{{1}, {2, 3}}}).Marshal())},
		{"list:v2-acked-and-unacked", hex.EncodeToString(listV2.Marshal())},
	}
}

func mustKey(t testing.TB) *KServerKey {
	k, err := DeriveKServerKey(testIKM)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func generate(t testing.TB) func() any {
	return func() any {
		k := mustKey(t)
		v := vectors{KServerIKM: hex.EncodeToString(testIKM), KServerPub: hex.EncodeToString(k.Public().Marshal()), Encodings: samples()}
		q := sampleQuery()
		sq, err := SealQuery(k.Public(), q)
		if err != nil {
			t.Fatal(err)
		}
		pq, _ := MarshalQuery(q)
		v.Sealed = append(v.Sealed, sealedVec{"query", hex.EncodeToString(sq), hex.EncodeToString(pq)})
		bad := bytes.Clone(sq)
		bad[len(bad)-100] ^= 1
		v.Sealed = append(v.Sealed, sealedVec{"query-altered", hex.EncodeToString(bad), ""})
		items := []KeyItem{{ID: sampleID(1), Key: "a.txt"}, {ID: sampleID(2), Key: "b.txt"}}
		c, err := SealChunk(k.Public(), items)
		if err != nil {
			t.Fatal(err)
		}
		p0, _ := MarshalKeyItem(&items[0])
		p1, _ := MarshalKeyItem(&items[1])
		v.Sealed = append(v.Sealed, sealedVec{"chunk", hex.EncodeToString(MarshalChunk(c)), hex.EncodeToString(append(p0, p1...))})
		swapped := &SealedChunk{Enc: c.Enc, Items: [][]byte{c.Items[1], c.Items[0]}}
		v.Sealed = append(v.Sealed, sealedVec{"chunk-reordered", hex.EncodeToString(MarshalChunk(swapped)), ""})
		dropped := &SealedChunk{Enc: c.Enc, Items: c.Items[1:]}
		v.Sealed = append(v.Sealed, sealedVec{"chunk-dropped-first", hex.EncodeToString(MarshalChunk(dropped)), ""})
		v.MustFail = mustFail()
		return v
	}
}

func mustFail() []failVec {
	q, _ := MarshalQuery(sampleQuery())
	qv := bytes.Clone(q)
	qv[0] = 3
	qv1 := bytes.Clone(q[:1024]) // the version 1 layout: a multiple of 1024 bytes
	qv1[0] = 1
	qpad := bytes.Clone(q)
	qpad[len(qpad)-1] = 1
	item, _ := MarshalKeyItem(&KeyItem{ID: sampleID(1), Key: "holiday.jpg", Pseudonyms: [][32]byte{{7}}})
	iv1 := bytes.Clone(item[:512])
	iv1[0] = 1
	ipad := bytes.Clone(item)
	ipad[len(ipad)-1] = 1
	return []failVec{
		{"query version 3", "query", hex.EncodeToString(qv)},
		{"query version 1 (padded to 1024)", "query", hex.EncodeToString(qv1)},
		{"query nonzero padding", "query", hex.EncodeToString(qpad)},
		{"query truncated", "query", hex.EncodeToString(q[:1000])},
		{"query padded past its size", "query", hex.EncodeToString(append(bytes.Clone(q), make([]byte, 1024)...))},
		{"key item version 1 (padded to 512)", "key_item", hex.EncodeToString(iv1)},
		{"key item nonzero padding", "key_item", hex.EncodeToString(ipad)},
		{"key item truncated", "key_item", hex.EncodeToString(item[:KeyItemSize-1])},
		{"key item padded past its size", "key_item", hex.EncodeToString(append(bytes.Clone(item), make([]byte, 512)...))},
		{"results not a size class", "results", "010b000000"},
		{"count trailing byte", "count", "01130000000700"},
		{"ids forged count", "ids", "0114ffffffff"},
		{"relay zero items", "relay", "01200000"},
		{"relay unknown kind", "relay", "012000010900000000"},
		{"publish no pairs", "publish", "0112000000000000"},
		{"publish wrong type", "publish", "0113000000000000"},
		{"user record bad flags", "user_record", "0142" + hex.EncodeToString(make([]byte, 32)) + "02"},
		{"kserver pub short", "kserver_pub", "01647a0000"},
		{"kserver pub other kem", "kserver_pub", "010020" + hex.EncodeToString(make([]byte, 32))},
		{"list version 3", "list", "031600000000"},
		{"list v2 unknown pair state", "list", "021600000001" + hex.EncodeToString(make([]byte, 16)) + "02" + "0000" + "00" + "0000"},
		{"list v2 truncated at the state", "list", "021600000001" + hex.EncodeToString(make([]byte, 16))},
	}
}

func TestVectors(t *testing.T) {
	var v vectors
	testutil.Vectors(t, vectorFile, &v, generate(t))
	k := mustKey(t)
	if got := hex.EncodeToString(k.Public().Marshal()); got != v.KServerPub {
		t.Fatalf("public key from ikm differs from the vector")
	}
	want := samples()
	if len(want) != len(v.Encodings) {
		t.Fatalf("%d encodings in file, %d samples", len(v.Encodings), len(want))
	}
	for i, e := range v.Encodings {
		if e != want[i] {
			t.Errorf("%s: encoding differs from the vector", e.Name)
		}
		parser := e.Name[:bytes.IndexByte([]byte(e.Name), ':')]
		b := testutil.Unhex(t, e.Hex)
		re, err := parsers[parser](b)
		if err != nil || !bytes.Equal(re, b) {
			t.Errorf("%s: parse+marshal: %v", e.Name, err)
		}
	}
	for _, s := range v.Sealed {
		checkSealed(t, k, s)
	}
	for _, f := range v.MustFail {
		if _, err := parsers[f.Parser](testutil.Unhex(t, f.Hex)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", f.Name, err)
		}
	}
}

func checkSealed(t *testing.T, k *KServerKey, s sealedVec) {
	b := testutil.Unhex(t, s.Sealed)
	var got []byte
	var err error
	if s.Name[:5] == "query" {
		var q *Query
		if q, err = OpenQuery(k, b); err == nil {
			got, _ = MarshalQuery(q)
		}
	} else {
		var c *SealedChunk
		if c, err = ParseChunk(b); err == nil {
			var items []KeyItem
			if items, err = OpenChunk(k, c); err == nil {
				for i := range items {
					p, _ := MarshalKeyItem(&items[i])
					got = append(got, p...)
				}
			}
		}
	}
	if s.Plain == "" {
		if !errors.Is(err, ErrOpen) {
			t.Errorf("%s: got %v, want ErrOpen", s.Name, err)
		}
		return
	}
	if err != nil || hex.EncodeToString(got) != s.Plain {
		t.Errorf("%s: open: %v", s.Name, err)
	}
}

func TestMatchRecords(t *testing.T) {
	q := sampleQuery()
	id := sampleID(3)
	rec := SealMatch(q, id, "report.pdf")
	if k, err := OpenMatch(q, id, rec); err != nil || k != "report.pdf" {
		t.Fatalf("open: %q %v", k, err)
	}
	if _, err := OpenMatch(q, sampleID(4), rec); !errors.Is(err, ErrOpen) {
		t.Fatalf("record moved to another id opened: %v", err)
	}
	q2 := *q
	q2.Nonce[0] ^= 1
	if _, err := OpenMatch(&q2, id, rec); !errors.Is(err, ErrOpen) {
		t.Fatalf("record from another query opened: %v", err)
	}
}

func TestQueryPaddingHidesLength(t *testing.T) {
	k := mustKey(t)
	sizes := map[int]bool{}
	for _, text := range []string{"a", "a-much-longer-query-string-than-the-first", string(bytes.Repeat([]byte{'x'}, MaxQuery))} {
		q := sampleQuery()
		q.Text = text
		s, err := SealQuery(k.Public(), q)
		if err != nil {
			t.Fatal(err)
		}
		sizes[len(s)] = true
	}
	if len(sizes) != 1 {
		t.Fatalf("sealed query sizes depend on the query: %v", sizes)
	}
}
