package dupless

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// vectorPlains returns, for each sealed base and root of testdata/dupless/roots-v2.json
// that authenticates under the vectors' key, the compressed and decompressed plaintexts:
// the seeds of the fuzz targets below.
func vectorPlains(f *testing.F) (bases, roots [][2][]byte) {
	var v []rootV2Vector
	testutil.Vectors(f, rootV2VectorFile, &v, func() any { return nil })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	open := func(b, ad []byte) [2][]byte {
		if !headedFits(k.roots, b) {
			return [2][]byte{}
		}
		z, err := openHeaded(k.roots, b, ad)
		if err != nil {
			return [2][]byte{}
		}
		plain, _ := rootDec.DecodeAll(z, nil)
		return [2][]byte{z, plain}
	}
	for _, rv := range v {
		if p := open(testutil.Unhex(f, rv.SealedBase), baseAD(rv.BaseID)); p[0] != nil {
			bases = append(bases, p)
		}
		if p := open(testutil.Unhex(f, rv.Sealed), rootADFor(rootVersion2, rv.Name)); p[0] != nil {
			roots = append(roots, p)
		}
	}
	if len(bases) == 0 || len(roots) == 0 {
		f.Fatal("no base or root of the vectors opens")
	}
	return bases, roots
}

// FuzzOpenBase reaches the tree base's parser past its SHA-256 and its authentication,
// which FuzzOpenRootV2's sealed bytes never pass: each input is sealed as a base under
// the fuzzer's key and opened by openBase with the sum and count a root would name. The
// input is the base's plaintext (compressed by the writer's encoder) or, with raw, the
// zstd stream itself. It errors, never panics, and a base that opens holds count entries
// and re-encodes to exactly its plaintext. Seeds: the vectors' bases.
func FuzzOpenBase(f *testing.F) {
	bases, _ := vectorPlains(f)
	for _, p := range bases {
		count := uint32(len(p[1]) / 35)
		if r, err := readHashEntries(&parser{b: p[1]}, "seed", nil); err == nil {
			count = uint32(len(r))
		}
		f.Add(p[1], count, false)
		f.Add(p[0], count, true)
	}
	f.Add([]byte{0, 0, 0, 0}, uint32(0), false)
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	var id [baseIDSize]byte
	id[0] = 7
	nonce := make([]byte, recordHeader-1)
	f.Fuzz(func(t *testing.T, in []byte, count uint32, raw bool) {
		z := in
		if !raw {
			z = rootEnc.EncodeAll(in, nil)
		}
		sealed := sealHeaded(k.roots, baseVersion, nonce, z, baseAD(baseName(id)))
		entries, err := k.openBase(sealed, id, sha256.Sum256(sealed), count)
		if err != nil {
			return
		}
		if uint32(len(entries)) != count {
			t.Fatalf("opened %d entries, its root names %d", len(entries), count)
		}
		plain := in
		if raw {
			plain, _ = rootDec.DecodeAll(in, nil)
		}
		if !bytes.Equal(appendHashEntries(nil, entries), plain) {
			t.Fatal("re-encoding differs")
		}
	})
}
