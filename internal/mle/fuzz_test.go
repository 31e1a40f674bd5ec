package mle

import (
	"bytes"
	"context"
	"testing"
)

// FuzzDec feeds arbitrary bytes to the ciphertext parsers: Dec, Open and TagGen must
// return an error or a result, never panic, and Dec and Open must agree.
func FuzzDec(f *testing.F) {
	for _, sc := range Schemes {
		for _, msg := range [][]byte{nil, []byte("seed message"), bytes.Repeat([]byte{7}, 300)} {
			c, _, _, _ := New(sc).Encrypt(context.Background(), LocalKeys{}, msg)
			f.Add(c, []byte(nil))
			k := New(sc).KeyGen(msg)
			f.Add(c, k[:])
		}
	}
	f.Add([]byte{}, []byte{})
	f.Add([]byte{1, 4, 0}, []byte{1})
	f.Fuzz(func(t *testing.T, c, key []byte) {
		var k Key
		copy(k[:], key)
		TagGen(c)
		TagGenStream(bytes.NewReader(c), int64(len(c)))
		m1, err1 := Dec(k, c, nil)
		var out bytes.Buffer
		err2 := Open(k, bytes.NewReader(c), int64(len(c)), &out, nil)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Dec err %v, Open err %v", err1, err2)
		}
		if err1 == nil && !bytes.Equal(m1, out.Bytes()) {
			t.Fatal("Dec and Open disagree")
		}
		if err2 != nil && out.Len() != 0 {
			t.Fatal("Open released bytes and failed")
		}
	})
}
