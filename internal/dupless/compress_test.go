package dupless

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/testutil"
)

const compressVectorFile = "../../testdata/dupless/compress.json"

// policyInputs are the chunks the compression policy vectors cover, by name; each is
// built from a recipe (no generator library), so the vector pins the policy, not a PRNG.
func policyInputs() map[string][]byte {
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog; "), 200)
	xs := chunkStream()
	gz := append([]byte{0x1f, 0x8b, 0x08}, make([]byte, 4093)...)
	png := append([]byte{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, make([]byte, 4088)...)
	words := strings.Fields("veil stores files on clouds you do not trust identical content from different users is still stored once and the servers learn little metadata")
	var prose []byte
	for i := 0; len(prose) < 16<<10; i++ { // words picked by the stream's bytes: matches of every length
		prose = append(append(prose, words[int(xs[i])%len(words)]...), " \n"[xs[i+1]%7/6])
	}
	return map[string][]byte{
		"prose-16384":         prose[:16<<10],                                            // compressed
		"text-9000":           text,                                                      // compressed
		"short-63":            make([]byte, 63),                                          // too short to try
		"zeros-4096":          make([]byte, 4096),                                        // compressed
		"gzip-magic-4096":     gz,                                                        // begins like gzip: not tried
		"png-magic-4096":      png,                                                       // begins like PNG: not tried
		"xorshift-4096":       xs[:4096],                                                 // does not shrink
		"probe-fails-131072":  append(bytes.Clone(xs[:32<<10]), make([]byte, 96<<10)...), // random 32 KiB prefix: not tried
		"probe-passes-262144": bytes.Repeat(text, 30)[:256<<10],                          // compressed
	}
}

type policyVector struct {
	Compressed bool   `json:"compressed"`
	MsgLen     int    `json:"msg_len"`
	MsgSHA256  string `json:"msg_sha256"`
}

// suiteFor picks the hash suite as every client does (by message length).
func suiteFor(n int) *mle.MLE { return &mle.MLE{Suite: mle.SuiteFor(n), Scheme: mle.HCE2} }

func policyOf(data []byte) policyVector {
	p := preparePiece(suiteFor, bytes.Clone(data), true)
	sum := sha256.Sum256(p.msg)
	return policyVector{p.flags&flagCompressed != 0, len(p.msg), hex.EncodeToString(sum[:])}
}

// TestCompressionPolicy pins what the compression policy makes of each input: whether the
// chunk is compressed and the exact message bytes (their hash). Every user must produce
// the same message for the same chunk or cross-user dedup breaks, so a change here (a
// zstd update that shapes frames differently, a new level or rule) is a policy change:
// regenerate only with -update and a CHANGELOG entry.
func TestCompressionPolicy(t *testing.T) {
	in := policyInputs()
	var want struct {
		Policy  int                     `json:"policy"`
		Vectors map[string]policyVector `json:"vectors"`
	}
	testutil.Vectors(t, compressVectorFile, &want, func() any {
		v := map[string]policyVector{}
		for name, data := range in {
			v[name] = policyOf(data)
		}
		return map[string]any{"policy": 2, "zstd": "klauspost/compress SpeedFastest, no CRC, zero frames", "vectors": v}
	})
	if len(want.Vectors) != len(in) {
		t.Fatalf("%d vectors for %d inputs", len(want.Vectors), len(in))
	}
	for name, data := range in {
		if got, w := policyOf(data), want.Vectors[name]; got != w {
			t.Errorf("%s: got %+v, want %+v", name, got, w)
		}
	}
}

// TestLooksCompressed: a chunk beginning with a compressed format's magic is stored as it
// is even when zstd would shrink it; the same bytes without the magic are compressed.
func TestLooksCompressed(t *testing.T) {
	for _, m := range compressedMagic {
		data := append(bytes.Clone(m), make([]byte, 8192)...)
		if p := preparePiece(suiteFor, data, true); p.flags&flagCompressed != 0 || !bytes.Equal(p.msg, data) {
			t.Errorf("magic %x: compressed", m)
		}
	}
	if p := preparePiece(suiteFor, make([]byte, 8192), true); p.flags&flagCompressed == 0 {
		t.Error("8 KiB of zeros not compressed")
	}
}
