package dupless

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const longNameVectorFile = "../../testdata/dupless/long-names.json"

type longNameVector struct {
	Comment string `json:"comment"`
	Name    string `json:"name,omitempty"` // ok vectors: the name, and what encName gives for it
	Tag     string `json:"tag"`            // the path component (and name object's name)
	Object  string `json:"object"`         // hex of .veil/names/<tag>
	Result  string `json:"result"`         // "ok" or "reject"
}

// TestLongNameVectors checks tags and name objects byte for byte (master key 0x42 × 32),
// and the objects that must be rejected under their tag.
func TestLongNameVectors(t *testing.T) {
	var vs []longNameVector
	testutil.Vectors(t, longNameVectorFile, &vs, func() any { return genLongNameVectors() })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for _, v := range vs {
		obj := testutil.Unhex(t, v.Object)
		got, err := k.openLongName(v.Tag, obj)
		if v.Result == "reject" {
			if err == nil {
				t.Errorf("%s: accepted as %q", v.Comment, got)
			}
			continue
		}
		if err != nil || got != v.Name {
			t.Errorf("%s: %q %v", v.Comment, got, err)
		}
		if enc, err := k.encName(v.Name); err != nil || enc != v.Tag {
			t.Errorf("%s: encName = %q %v, want %q", v.Comment, enc, err, v.Tag)
		}
		if sealed, _ := k.sealLongName(v.Name); !bytes.Equal(sealed, obj) {
			t.Errorf("%s: sealed %x, want %s", v.Comment, sealed, v.Object)
		}
	}
}

func genLongNameVectors() []longNameVector {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	var out []longNameVector
	obj := func(name string) []byte { b, _ := k.sealLongName(name); return b }
	ok := func(comment, name string) {
		out = append(out, longNameVector{Comment: comment, Name: name, Tag: k.longTag(name),
			Object: hex.EncodeToString(obj(name)), Result: "ok"})
	}
	ok("the shortest long name (MaxNameLen+1 = 172 bytes)", strings.Repeat("a", MaxNameLen+1))
	ok("255 bytes, multi-byte UTF-8", strings.Repeat("é", 127)+"f")
	bad := func(comment, tag string, b []byte) {
		out = append(out, longNameVector{Comment: comment, Tag: tag, Object: hex.EncodeToString(b), Result: "reject"})
	}
	a, b := strings.Repeat("a", 200), strings.Repeat("b", 200)
	bad("another long name's object under this tag", k.longTag(a), obj(b))
	flip := obj(a)
	flip[len(flip)-1] ^= 1
	bad("one bit of the ciphertext flipped", k.longTag(a), flip)
	v2 := append([]byte{2}, obj(a)[1:]...)
	bad("version byte 2", k.longTag(a), v2)
	short := "short"
	bad("a short name (stored as its own encryption, never under a tag)", k.longTag(short), obj(short))
	bad("empty object", k.longTag(a), nil)
	return out
}

// FuzzOpenLongName: any bytes under any tag are rejected or are the name whose tag it is.
func FuzzOpenLongName(f *testing.F) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	a := strings.Repeat("a", 200)
	good, _ := k.sealLongName(a)
	f.Add(k.longTag(a), good)
	f.Add(k.longTag(a), []byte{1})
	f.Add("~", []byte{})
	f.Fuzz(func(t *testing.T, tag string, b []byte) {
		name, err := k.openLongName(tag, b)
		if err != nil {
			return
		}
		if k.longTag(name) != tag || len(name) <= MaxNameLen || len(name) > MaxLongNameLen {
			t.Fatalf("accepted %q under %q", name, tag)
		}
	})
}
