package dupless

import (
	"bytes"
	"io"
	"slices"
	"testing"

	cdc "github.com/PlakarKorp/go-cdc-chunkers"
)

// cutsWith chunks data with the named cdc algorithm at veil's sizes.
func cutsWith(t testing.TB, algorithm string, data []byte) []int {
	c, err := cdc.NewChunker(algorithm, bytes.NewReader(data), &cdc.ChunkerOpts{MinSize: MinChunk, NormalSize: NormChunk, MaxSize: MaxChunk})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for {
		ch, err := c.Next()
		if len(ch) > 0 {
			sizes = append(sizes, len(ch))
		}
		if err == io.EOF {
			return sizes
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// gearCut cuts exactly where the library's fastcdc-v1.0.0 does: random streams (many cuts
// before and after the normal size), streams of every length around the sizes' edges, and
// streams without a cut point (zeros: MaxChunk chunks), a table byte at a time.
func TestGearCutMatchesLibrary(t *testing.T) {
	stream := chunkStream()
	zeros := make([]byte, 3*MaxChunk+5)
	ramp := make([]byte, 2*MaxChunk)
	for i := range ramp {
		ramp[i] = byte(i * 7 / 3)
	}
	cases := map[string][]byte{"xorshift 40 MiB": stream, "zeros": zeros, "ramp": ramp}
	for _, n := range []int{0, 1, MinChunk - 1, MinChunk, MinChunk + 1, NormChunk - 1, NormChunk, NormChunk + 1,
		NormChunk + 3, MaxChunk - 1, MaxChunk, MaxChunk + 1, MaxChunk + MinChunk + 2} {
		cases["xorshift prefix "+itoa(n)] = stream[5 : 5+n]
	}
	for off := 0; off < 64; off += 9 { // other alignments of the same content
		cases["xorshift from "+itoa(off)] = stream[off : off+6*NormChunk]
	}
	for name, data := range cases {
		want, got := cutsWith(t, chunkAlgorithm, data), cutsWith(t, gearAlgorithm, data)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: cuts %v, the library's %v", name, got, want)
		}
	}
	if err := (gearCutter{}).Validate(&cdc.ChunkerOpts{MinSize: MinChunk, NormalSize: 2 * NormChunk, MaxSize: MaxChunk}); err == nil {
		t.Fatal("gear cutter accepted other sizes")
	}
}

// BenchmarkGearCut: go test ./internal/dupless -run '^$' -bench GearCut (the library's
// algorithm and gearCut on the same 40 MiB, through the library's buffering).
func BenchmarkGearCut(b *testing.B) {
	data := chunkStream()
	for _, alg := range []string{chunkAlgorithm, gearAlgorithm} {
		b.Run(alg, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				cutsWith(b, alg, data)
			}
		})
	}
}
