package dupless

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// rootV2Vector is a version 2 root with its base (docs/formats/key-record.md, "Tree root,
// version 2"): the base's entries, the root's changes ("" removes the path), and the
// sealed objects.
type rootV2Vector struct {
	Comment     string            `json:"comment,omitempty"`
	Name        string            `json:"name"`
	Seq         uint64            `json:"seq,omitempty"`
	Time        int64             `json:"time,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	BaseID      string            `json:"base_id"`
	BaseEntries map[string]string `json:"base_entries,omitempty"` // path -> hex hash
	Changes     map[string]string `json:"changes,omitempty"`      // path -> hex hash, "" removed
	Entries     map[string]string `json:"entries,omitempty"`      // what a reader lists
	SealedBase  string            `json:"sealed_base"`
	Sealed      string            `json:"sealed"`
	Result      string            `json:"result"` // "ok" or "reject"
}

const rootV2VectorFile = "../../testdata/dupless/roots-v2.json"

func hexEntries(m map[string][32]byte) map[string]string {
	out := map[string]string{}
	for p, h := range m {
		out[p] = hex.EncodeToString(h[:])
	}
	return out
}

// The master key of the vectors is 32 bytes of 0x42, as in roots.json.
func genRootV2Vectors(t *testing.T) []rootV2Vector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x09}, recordHeader-1)
	base := &rootBase{entries: map[string][32]byte{"ENCDIR/.dir": {1}, "ENCDIR/ENCNAME.key": {2}, "ENCNAME2.key": {3}}}
	base.count = uint32(len(base.entries))
	copy(base.id[:], bytes.Repeat([]byte{0xb5}, baseIDSize))
	sealedBase := k.sealBaseNonce(base, nonce)
	h4 := [32]byte{4}
	r := &treeRoot{Seq: 9, Time: 1700000000000000000, base: base,
		delta: map[string]*[32]byte{"ENCNAME2.key": nil, "ENCNAME3.key": &h4}}
	r.Parent[0] = 0xaa
	r.materialize()
	good := k.sealRootNonce(r, nonce)
	v := rootV2Vector{Name: rootName(9), Seq: 9, Time: r.Time, Parent: hex.EncodeToString(r.Parent[:]),
		BaseID: baseName(base.id), BaseEntries: hexEntries(base.entries),
		Changes: map[string]string{"ENCNAME2.key": "", "ENCNAME3.key": hex.EncodeToString(h4[:])},
		Entries: hexEntries(r.Entries), SealedBase: hex.EncodeToString(sealedBase), Sealed: hex.EncodeToString(good), Result: "ok"}
	out := []rootV2Vector{v}
	bad := func(comment, name string, root, b []byte) {
		out = append(out, rootV2Vector{Comment: comment, Name: name, BaseID: v.BaseID, Sealed: hex.EncodeToString(root),
			SealedBase: hex.EncodeToString(b), Result: "reject"})
	}
	flipped := bytes.Clone(sealedBase)
	flipped[len(flipped)-20] ^= 1
	bad("base: one bit flipped", v.Name, good, flipped)
	bad("root: version byte 1 (a version 2 root's AD differs)", v.Name, append([]byte{1}, good[1:]...), sealedBase)
	bad("root: renamed to another number", rootName(10), good, sealedBase)
	other := &rootBase{id: base.id, count: 1, entries: map[string][32]byte{"ENCNAME2.key": {3}}}
	bad("base: another authentic base under the same id", v.Name, good, k.sealBaseNonce(other, nonce))
	return out
}

func TestRootV2Vectors(t *testing.T) {
	var v []rootV2Vector
	testutil.Vectors(t, rootV2VectorFile, &v, func() any { return genRootV2Vectors(t) })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for i, rv := range v {
		r, err := k.openRoot(testutil.Unhex(t, rv.Sealed), rv.Name)
		if err == nil && r.base == nil {
			t.Fatalf("vector %d: not a version 2 root", i)
		}
		if err == nil {
			var ents map[string][32]byte
			ents, err = k.openBase(testutil.Unhex(t, rv.SealedBase), r.base.id, r.base.sum, r.base.count)
			if err == nil {
				r.base.entries = ents
				r.materialize()
			}
		}
		if rv.Result == "reject" {
			if err == nil {
				t.Errorf("vector %d (%s): accepted", i, rv.Comment)
			}
			continue
		}
		if err != nil {
			t.Fatalf("vector %d: %v", i, err)
		}
		if got := hexEntries(r.Entries); len(got) != len(rv.Entries) {
			t.Fatalf("vector %d: %d entries, want %d", i, len(got), len(rv.Entries))
		} else {
			for p, h := range rv.Entries {
				if got[p] != h {
					t.Errorf("vector %d: %s lists %s, want %s", i, p, got[p], h)
				}
			}
		}
		if baseName(r.base.id) != rv.BaseID || r.Seq != rv.Seq || r.Time != rv.Time || hex.EncodeToString(r.Parent[:]) != rv.Parent {
			t.Errorf("vector %d: head parsed differently", i)
		}
		// Sealed again (the zstd frames may differ between compressor versions): it opens
		// to the same plaintext.
		again, err := k.openRoot(k.sealRootNonce(r, make([]byte, recordHeader-1)), rv.Name)
		if err != nil || !bytes.Equal(again.marshalV2(), r.marshalV2()) {
			t.Errorf("vector %d: does not survive sealing: %v", i, err)
		}
	}
}

// FuzzOpenRootV2: arbitrary bytes as a version 2 root's plaintext and as a sealed base:
// errors, never panics, and a plaintext that parses re-encodes exactly. A sealed base
// stops at its SHA-256: FuzzOpenBase fuzzes the base's plaintext. Seeds include the
// vectors' roots.
func FuzzOpenRootV2(f *testing.F) {
	_, roots := vectorPlains(f)
	for _, p := range roots {
		f.Add(p[1], []byte{1})
	}
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	base := &rootBase{count: 2, entries: map[string][32]byte{"a.key": {1}, "b/.dir": {2}}}
	sealedBase := k.sealBaseNonce(base, make([]byte, recordHeader-1))
	h := [32]byte{3}
	r := &treeRoot{Seq: 3, base: base, delta: map[string]*[32]byte{"a.key": nil, "c.key": &h}}
	f.Add(r.marshalV2(), sealedBase)
	f.Add((&treeRoot{Seq: 1, base: &rootBase{}}).marshalV2(), []byte{1})
	f.Fuzz(func(t *testing.T, plain, sealed []byte) {
		k.openBase(sealed, base.id, base.sum, base.count)
		r, err := unmarshalRootV2(plain)
		if err == nil && !bytes.Equal(r.marshalV2(), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}
