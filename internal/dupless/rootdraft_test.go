package dupless

import (
	"bytes"
	"crypto/rand"
	"maps"
	"sort"
	"testing"
	"time"
)

// zstdFrames counts the zstd frames of a root object's compressed plaintext (by their
// magic number; a chance match in 32-byte random hashes is negligible).
func zstdFrames(t *testing.T, k *userKeys, obj []byte, name string) int {
	t.Helper()
	return bytes.Count(mustOpen(t, k, obj, name), []byte{0x28, 0xb5, 0x2f, 0xfd})
}

// A drafted root, finished with its record's hash, is the root sealRoot would make of the
// same entries (opened as any root; the same plaintext), timed when it is sealed, in
// several frames; for a path
// first, in the middle, last, new or replacing a listed one, and in an empty root.
func TestRootDraftFinishes(t *testing.T) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	base := benchRoot(40)
	base.sum = sum32(7)
	paths := sortedKeys(base.Entries)
	cases := map[string]struct {
		base *treeRoot
		path string
	}{
		"first":       {base, "AAA/first.key"},
		"last":        {base, "zzz/last.key"},
		"middle, new": {base, paths[20] + "x"},
		"replaced":    {base, paths[13]},
		"empty root":  {&treeRoot{Seq: 3}, "only.key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := k.draftRoot(tc.base, tc.path)
			var h [32]byte
			rand.Read(h[:])
			sealed := time.Now().UnixNano() // after the draft: the root's time is its sealing's
			got, obj := k.finishDraft(d, h)
			if got.Time < sealed {
				t.Fatalf("drafted root timed %d, before it was sealed (%d)", got.Time, sealed)
			}
			want := maps.Clone(tc.base.Entries)
			if want == nil {
				want = map[string][32]byte{}
			}
			want[tc.path] = h
			opened, err := k.openRoot(obj, rootName(tc.base.Seq+1))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(opened.Entries, want) || opened.Seq != tc.base.Seq+1 || opened.Parent != tc.base.sum || opened.Time != got.Time || opened.sum != got.sum {
				t.Fatalf("drafted root opens as seq %d, %d entries; want seq %d, %d entries", opened.Seq, len(opened.Entries), tc.base.Seq+1, len(want))
			}
			plain, _ := rootDec.DecodeAll(mustOpen(t, k, obj, rootName(got.Seq)), nil)
			if !bytes.Equal(plain, got.marshal()) {
				t.Fatal("drafted plaintext differs from the root's marshalling")
			}
			if n := zstdFrames(t, k, obj, rootName(got.Seq)); n < 3 {
				t.Fatalf("%d zstd frames, want the draft's (seq and time, head, hash, and tail unless empty)", n)
			}
		})
	}
}

func mustOpen(t *testing.T, k *userKeys, obj []byte, name string) []byte {
	t.Helper()
	z, err := k.roots.Open(nil, obj[1:recordHeader], obj[recordHeader:], rootAD(name))
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func sortedKeys[E any](m map[string]E) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
