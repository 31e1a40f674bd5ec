package segment

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../../testdata/metal/segment-vectors.json"

// vector pins docs/formats/metal-segment.md: a file, the nonce of its write, the block
// size, and every block written.
type vector struct {
	BlockSize int      `json:"block_size"`
	Nonce     string   `json:"nonce"`
	Data      string   `json:"data"`
	Blocks    []string `json:"blocks"`
}

func nonceOf(b byte) (n [NonceLen]byte) {
	for i := range n {
		n[i] = b + byte(i)
	}
	return n
}

func TestVectors(t *testing.T) {
	gen := func() any {
		var vs []vector
		for _, c := range []struct {
			bs   int
			data string
		}{{64, ""}, {64, "hello"}, {64, strings.Repeat("a", 31)}, {64, strings.Repeat("0123456789", 7)}, {48, "fifteen bytes!!sixteen bytes!!!!"}} {
			n := nonceOf(byte(len(vs) * 16))
			bl, err := Split([]byte(c.data), c.bs, n)
			if err != nil {
				t.Fatal(err)
			}
			v := vector{BlockSize: c.bs, Nonce: hex.EncodeToString(n[:]), Data: hex.EncodeToString([]byte(c.data))}
			for _, b := range bl {
				v.Blocks = append(v.Blocks, hex.EncodeToString(b))
			}
			vs = append(vs, v)
		}
		return vs
	}
	var vs []vector
	testutil.Vectors(t, vectorFile, &vs, gen)
	if len(vs) != 5 {
		t.Fatalf("%d vectors", len(vs))
	}
	for i, v := range vs {
		var n [NonceLen]byte
		copy(n[:], testutil.Unhex(t, v.Nonce))
		data := testutil.Unhex(t, v.Data)
		bl, err := Split(data, v.BlockSize, n)
		if err != nil || len(bl) != len(v.Blocks) {
			t.Fatalf("vector %d: %d blocks, want %d (%v)", i, len(bl), len(v.Blocks), err)
		}
		for k := range bl {
			if want := testutil.Unhex(t, v.Blocks[k]); !bytes.Equal(bl[k], want) {
				t.Fatalf("vector %d block %d:\n got %x\nwant %x", i, k, bl[k], want)
			}
		}
		if got := join(t, bl); !bytes.Equal(got, data) {
			t.Fatalf("vector %d: joined %q", i, got)
		}
	}
}

func join(t *testing.T, bl [][]byte) []byte {
	t.Helper()
	j, err := NewJoiner(bl[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bl[1:] {
		if err := j.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	out, err := j.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRoundTripSizes: every length around the segment boundaries comes back whole, in the
// number of segments Count says.
func TestRoundTripSizes(t *testing.T) {
	for _, bs := range []int{MinBlockSize, 64, 1024} {
		p := Payload(bs)
		for _, n := range []int{0, 1, p - 1, p, p + 1, 2*p - 1, 2 * p, 2*p + 1, 5*p + 3} {
			data := bytes.Repeat([]byte{0xa5}, n)
			for i := range data {
				data[i] ^= byte(i * 7)
			}
			bl, err := Split(data, bs, nonceOf(1))
			if err != nil {
				t.Fatal(err)
			}
			c, _ := Count(uint64(n), bs)
			if uint64(len(bl)) != c || c != uint64(max(1, (n+p-1)/p)) {
				t.Fatalf("block %d, %d bytes: %d blocks, Count %d", bs, n, len(bl), c)
			}
			for _, b := range bl {
				if len(b) != bs {
					t.Fatalf("a block of %d bytes, want %d", len(b), bs)
				}
			}
			if got := join(t, bl); !bytes.Equal(got, data) {
				t.Fatalf("block %d, %d bytes: joined %d bytes", bs, n, len(got))
			}
		}
	}
	if _, err := Split([]byte("x"), MinBlockSize-1, nonceOf(0)); err == nil || !strings.Contains(err.Error(), "too small") {
		t.Fatalf("a block below MinBlockSize: %v", err)
	}
}

// TestMixedWritesRefused: segments of an older write, of another file, out of order, never
// written, or altered are refused; a non-head segment says where its file starts.
func TestMixedWritesRefused(t *testing.T) {
	const bs = 64
	data := bytes.Repeat([]byte("abcdefgh"), 12) // 96 bytes: 4 segments of 31
	old, _ := Split(data, bs, nonceOf(1))
	nw, _ := Split(append([]byte("X"), data[1:]...), bs, nonceOf(2))
	other, _ := Split(bytes.Repeat([]byte("z"), 96), bs, nonceOf(3))
	cases := []struct {
		name   string
		blocks [][]byte
		want   error
		text   string
	}{
		{"interrupted overwrite (new head, old tail)", [][]byte{nw[0], nw[1], old[2], old[3]}, ErrMixed, "segment 3 of 4 belongs to another write"},
		{"interrupted overwrite (old head, new segment)", [][]byte{old[0], nw[1], old[2], old[3]}, ErrMixed, "segment 2 of 4 belongs to another write"},
		{"another file's segment", [][]byte{old[0], old[1], other[2], old[3]}, ErrMixed, "another write"},
		{"out of order", [][]byte{old[0], old[2], old[1], old[3]}, ErrMixed, "holds index 2"},
		{"never written", [][]byte{old[0], old[1], make([]byte, bs), old[3]}, ErrMixed, "never written"},
	}
	for _, c := range cases {
		j, err := NewJoiner(c.blocks[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range c.blocks[1:] {
			if err = j.Add(b); err != nil {
				break
			}
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := j.Bytes(); err == nil {
			t.Fatalf("%s: Bytes after a refused segment", c.name)
		}
	}
	var nh *NotHeadError
	if _, err := NewJoiner(old[2]); !errors.As(err, &nh) || nh.Index != 2 || nh.Count != 4 {
		t.Fatalf("a non-head segment as head: %v", err)
	}
	if _, err := NewJoiner(make([]byte, bs)); !errors.Is(err, ErrEmpty) {
		t.Fatalf("an all-zero head: %v", err)
	}
	for i, mut := range []func(b []byte){
		func(b []byte) { b[0] = 2 },                                                 // version
		func(b []byte) { b[HeaderLen-8] += 31 },                                     // length no longer matches the count
		func(b []byte) { b[1+NonceLen+4] = 9 },                                      // count
		func(b []byte) { b[1+NonceLen] = 7 },                                        // index past the count
		func(b []byte) { b[bs-1] = 1 },                                              // bytes after the content (last segment)
		func(b []byte) { copy(b[HeaderLen-8:], []byte{0, 0, 0, 0, 0, 0, 0, 0x80}) }, // huge length
	} {
		b := bytes.Clone(old[3])
		mut(b)
		if _, err := Parse(b); err == nil || errors.Is(err, ErrEmpty) {
			t.Fatalf("mutation %d accepted", i)
		}
	}
}

// FuzzParse: Parse and the Joiner never panic on any block, and what they accept
// re-encodes to the same bytes.
func FuzzParse(f *testing.F) {
	for _, d := range []string{"", "hello", strings.Repeat("x", 100)} {
		bl, _ := Split([]byte(d), 64, nonceOf(9))
		for _, b := range bl {
			f.Add(b)
		}
	}
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := Parse(b)
		if err != nil {
			return
		}
		c := Content(h, b)
		if len(c) > Payload(len(b)) {
			t.Fatalf("content of %d bytes in a block of %d", len(c), len(b))
		}
		re := make([]byte, len(b))
		h.put(re)
		copy(re[HeaderLen:], c)
		if !bytes.Equal(re, b) {
			t.Fatalf("re-encoding differs")
		}
		if j, err := NewJoiner(b); err == nil && j.Remaining() == 0 {
			if out, err := j.Bytes(); err != nil || !bytes.Equal(out, c) {
				t.Fatalf("a one-segment file: %v", err)
			}
		}
	})
}
