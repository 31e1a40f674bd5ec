package dupless

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

const chunkVectorFile = "../../testdata/dupless/chunks.json"

// chunkStream is 40 MiB of reproducible pseudo-random bytes (xorshift64, seed 1), built
// without any library, so the vector does not depend on a generator's implementation.
func chunkStream() []byte {
	b := make([]byte, 40<<20)
	x := uint64(1)
	for i := 0; i+8 <= len(b); i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		for j := 0; j < 8; j++ {
			b[i+j] = byte(x >> (8 * j))
		}
	}
	return b
}

// TestChunkBoundaries pins where content-defined chunking cuts: if they moved (a library
// update, a changed parameter), every user's new uploads would stop deduplicating against
// the old ones. Regenerate only with a written reason (-update).
func TestChunkBoundaries(t *testing.T) {
	data := chunkStream()
	var sizes []int
	sp := newSplitter(bytes.NewReader(data))
	defer sp.close()
	total := 0
	for {
		c, err := sp.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(c) < MinChunk && total+len(c) != len(data) || len(c) > MaxChunk {
			t.Fatalf("chunk of %d bytes outside [%d, %d]", len(c), MinChunk, MaxChunk)
		}
		if !bytes.Equal(c, data[total:total+len(c)]) {
			t.Fatal("chunks do not reassemble the stream")
		}
		total += len(c)
		sizes = append(sizes, len(c))
	}
	if total != len(data) {
		t.Fatalf("chunks cover %d of %d bytes", total, len(data))
	}
	var want struct{ Sizes []int }
	testutil.Vectors(t, chunkVectorFile, &want, func() any {
		return map[string]any{"algorithm": chunkAlgorithm, "stream": "xorshift64 seed 1, 40 MiB", "sizes": sizes}
	})
	if got, _ := json.Marshal(sizes); string(got) != string(mustJSON(want.Sizes)) {
		t.Fatalf("chunk boundaries moved:\n got %v\nwant %v", sizes, want.Sizes)
	}
}
