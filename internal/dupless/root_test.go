package dupless

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

type rootVector struct {
	Comment string            `json:"comment,omitempty"`
	Name    string            `json:"name"`
	Seq     uint64            `json:"seq,omitempty"`
	Time    int64             `json:"time,omitempty"`
	Parent  string            `json:"parent,omitempty"`
	Entries map[string]string `json:"entries,omitempty"` // path -> hex hash
	Sealed  string            `json:"sealed"`
	Result  string            `json:"result"` // "ok" or "reject"
}

const rootVectorFile = "../../testdata/dupless/roots.json"

// The master key of the vectors is 32 bytes of 0x42, as in records-v2.json.
func genRootVectors(t *testing.T) []rootVector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x09}, recordHeader-1)
	r := &treeRoot{Seq: 7, Time: 1700000000000000000, Entries: map[string][32]byte{
		"ENCDIR/.dir": {1}, "ENCDIR/ENCNAME.key": {2}, "ENCNAME2.key": {3},
	}}
	r.Parent[0] = 0xaa
	good := k.sealRootNonce(r, nonce)
	ents := map[string]string{}
	for p, h := range r.Entries {
		ents[p] = hex.EncodeToString(h[:])
	}
	out := []rootVector{{Name: rootName(7), Seq: 7, Time: r.Time, Parent: hex.EncodeToString(r.Parent[:]), Entries: ents,
		Sealed: hex.EncodeToString(good), Result: "ok"}}
	empty := &treeRoot{Seq: 1}
	out = append(out, rootVector{Name: rootName(1), Seq: 1, Parent: hex.EncodeToString(make([]byte, 32)), Entries: map[string]string{},
		Sealed: hex.EncodeToString(k.sealRootNonce(empty, nonce)), Result: "ok"})
	bad := func(comment, name string, b []byte) {
		out = append(out, rootVector{Comment: comment, Name: name, Sealed: hex.EncodeToString(b), Result: "reject"})
	}
	bad("renamed to another number", rootName(8), good)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-20] ^= 1
	bad("one bit flipped", rootName(7), flipped)
	bad("unknown version", rootName(7), append([]byte{2}, good[1:]...))
	bad("truncated", rootName(7), good[:len(good)-1])
	lying := &treeRoot{Seq: 6, Entries: map[string][32]byte{}}
	b := k.sealRootNonce(lying, nonce)
	// Sealed for name 7 but holding number 6: build it with the AD of 7.
	plain := rootEnc.EncodeAll(lying.marshal(), nil)
	b = append(b[:recordHeader:recordHeader], nil...)
	b = k.roots.Seal(b, nonce, plain, rootAD(rootName(7)))
	bad("authentic but holds another number than its name", rootName(7), b)
	return out
}

func TestRootVectors(t *testing.T) {
	var v []rootVector
	testutil.Vectors(t, rootVectorFile, &v, func() any { return genRootVectors(t) })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	nonce := bytes.Repeat([]byte{0x09}, recordHeader-1)
	for i, rv := range v {
		sealed := testutil.Unhex(t, rv.Sealed)
		r, err := k.openRoot(sealed, rv.Name)
		if rv.Result == "reject" {
			if err == nil {
				t.Errorf("root %d (%s): accepted", i, rv.Comment)
			}
			continue
		}
		if err != nil {
			t.Errorf("root %d: %v", i, err)
			continue
		}
		want := &treeRoot{Seq: rv.Seq, Time: rv.Time, Entries: map[string][32]byte{}}
		copy(want.Parent[:], testutil.Unhex(t, rv.Parent))
		for p, h := range rv.Entries {
			var x [32]byte
			copy(x[:], testutil.Unhex(t, h))
			want.Entries[p] = x
		}
		// The format pins the plaintext; the zstd frame around it may differ between
		// compressor versions, so sealing is checked by opening, not byte for byte.
		if !bytes.Equal(r.marshal(), want.marshal()) {
			t.Errorf("root %d: parsed differently from the vector", i)
		}
		if again, err := k.openRoot(k.sealRootNonce(want, nonce), rv.Name); err != nil || !bytes.Equal(again.marshal(), want.marshal()) {
			t.Errorf("root %d: does not survive sealing: %v", i, err)
		}
	}
}

// FuzzOpenRoot: arbitrary bytes as a sealed root and as a root's plaintext: errors, never
// panics, and what parses re-encodes exactly.
func FuzzOpenRoot(f *testing.F) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	r := &treeRoot{Seq: 3, Entries: map[string][32]byte{"a.key": {1}, "b/.dir": {2}}}
	f.Add(k.sealRoot(r), r.marshal())
	f.Add([]byte{1}, (&treeRoot{Seq: 1}).marshal())
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		k.openRoot(sealed, rootName(3))
		r, err := unmarshalRoot(plain)
		if err == nil && !bytes.Equal(r.marshal(), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}
