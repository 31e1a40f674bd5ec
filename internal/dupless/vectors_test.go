package dupless

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/testutil"
)

const vectorFile = "../../testdata/dupless/vectors.json"

type nameVector struct {
	Plain string `json:"plain"`
	Enc   string `json:"enc"`
}

type recordVector struct {
	Comment string  `json:"comment,omitempty"`
	EncPath string  `json:"enc_path"`
	Record  *record `json:"record,omitempty"`
	Sealed  string  `json:"sealed"` // hex
	Result  string  `json:"result"` // "ok" or "reject"
}

type vectors struct {
	Master     string         `json:"master"`
	Names      []nameVector   `json:"names"`
	Records    []recordVector `json:"records"`
	KeyFile    string         `json:"keyfile"`
	Passphrase string         `json:"passphrase"`
}

// genRecordVectors writes the current (version 2) record vectors, including ones that MUST
// be rejected. The version 1 file (vectorFile) is frozen: veil reads version 1 records but
// no longer writes them, so it cannot regenerate them.
func genRecordVectors(t *testing.T) []recordVector {
	master := bytes.Repeat([]byte{0x42}, MasterKeySize)
	k, _ := deriveUserKeys(master)
	var out []recordVector
	nonce := bytes.Repeat([]byte{0x07}, recordHeader-1)
	file := &record{Type: typeFile, Mode: 0o644, MTime: 981173106000007000, Size: 7, KeyID: "k1",
		Chunks: []chunkRef{{Flags: flagCompressed, PlainLen: 7, MsgLen: 5, Suite: mle.SHA256, Scheme: mle.HCE2}}}
	for i := range file.Chunks[0].Key {
		file.Chunks[0].Key[i], file.Chunks[0].Digest[i], file.Chunks[0].Tag[i] = byte(i), byte(2*i), byte(3*i)
	}
	link := &record{Type: typeSymlink, Mode: 0o777, MTime: 1, Target: "../target"}
	dir := &record{Type: typeDir, Mode: 0o755, MTime: 2}
	const path = "ENCDIR/ENCNAME.key"
	for _, r := range []*record{file, link, dir} {
		s := k.sealRecordNonce(r, path, nonce)
		out = append(out, recordVector{EncPath: path, Record: r, Sealed: hex.EncodeToString(s), Result: "ok"})
	}
	good := k.sealRecordNonce(file, path, nonce)
	bad := func(comment, path string, b []byte) {
		out = append(out, recordVector{Comment: comment, EncPath: path, Sealed: hex.EncodeToString(b), Result: "reject"})
	}
	bad("stored under another name", "ENCDIR/OTHER.key", good)
	flipped := bytes.Clone(good)
	flipped[40] ^= 1
	bad("one bit flipped", "ENCDIR/ENCNAME.key", flipped)
	bad("truncated", path, good[:len(good)-1])
	bad("version byte relabelled as 1", path, append([]byte{1}, good[1:]...))
	bad("unknown version", path, append([]byte{3}, good[1:]...))
	wrongSize := *file
	wrongSize.Size = 8
	bad("authentic but inconsistent: size does not match chunks", path, k.sealRecordNonce(&wrongSize, path, nonce))
	for _, f := range []struct {
		comment string
		suite   mle.Suite
		scheme  mle.Scheme
	}{{"authentic but names HCE1 (not tag consistent)", mle.SHA256, mle.HCE1}, {"authentic but names no scheme", mle.SHA256, 0}, {"authentic but names an unknown suite", 9, mle.HCE2}} {
		r := *file
		r.Chunks = []chunkRef{file.Chunks[0]}
		r.Chunks[0].Suite, r.Chunks[0].Scheme = f.suite, f.scheme
		bad(f.comment, path, k.sealRecordNonce(&r, path, nonce))
	}
	return out
}

const recordVectorFile = "../../testdata/dupless/records-v2.json"

// TestRecordVectors checks the version 2 record vectors byte for byte.
func TestRecordVectors(t *testing.T) {
	var v []recordVector
	testutil.Vectors(t, recordVectorFile, &v, func() any { return genRecordVectors(t) })
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	checkRecordVectors(t, k, v)
}

func checkRecordVectors(t *testing.T, k *userKeys, v []recordVector) {
	t.Helper()
	nonce := bytes.Repeat([]byte{0x07}, recordHeader-1)
	for i, rv := range v {
		sealed, _ := hex.DecodeString(rv.Sealed)
		r, err := k.openRecord(sealed, rv.EncPath)
		switch rv.Result {
		case "ok":
			if err != nil {
				t.Errorf("record %d: %v", i, err)
				continue
			}
			// Only the current version can be re-created byte for byte.
			if sealed[0] >= recordVersion && !bytes.Equal(k.sealRecordNonce(rv.Record, rv.EncPath, nonce), sealed) {
				t.Errorf("record %d: sealing does not reproduce the vector", i)
			}
			if got, _ := json.Marshal(r); string(got) != string(mustJSON(rv.Record)) {
				t.Errorf("record %d: parsed %s, want %s", i, got, mustJSON(rv.Record))
			}
		case "reject":
			if !errors.Is(err, ErrRecord) {
				t.Errorf("record %d (%s): %v, want ErrRecord", i, rv.Comment, err)
			}
		default:
			t.Errorf("record %d: unknown result %q", i, rv.Result)
		}
	}
}

func TestDuplessVectors(t *testing.T) {
	var v vectors
	testutil.Vectors(t, vectorFile, &v, func() any {
		t.Fatal(vectorFile + " holds version 1 records, which veil no longer writes: it is frozen")
		return nil
	})
	master, _ := hex.DecodeString(v.Master)
	k, err := deriveUserKeys(master)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range v.Names {
		if e, _ := k.encName(n.Plain); e != n.Enc {
			t.Errorf("encName(%q) = %s, want %s", n.Plain, e, n.Enc)
		}
	}
	checkRecordVectors(t, k, v.Records) // version 1: read, not re-created
	kf, _ := hex.DecodeString(v.KeyFile)
	if got, err := OpenKeyFile(kf, []byte(v.Passphrase)); err != nil || !bytes.Equal(got, master) {
		t.Errorf("key file vector: %v", err)
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// FuzzOpenRecord: arbitrary bytes as a sealed record, and arbitrary plaintext to the
// parser (as if authenticated): errors, never panics, and what parses re-encodes exactly.
func FuzzOpenRecord(f *testing.F) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{1}, MasterKeySize))
	r := &record{Type: typeFile, Size: 3, Chunks: []chunkRef{{PlainLen: 3, MsgLen: 3, Suite: mle.BLAKE3, Scheme: mle.HCE2}}}
	f.Add(k.sealRecord(r, "p"), r.marshal())
	f.Add([]byte{1}, (&record{Type: typeSymlink, Target: "t"}).marshal())
	f.Add([]byte{}, []byte{3, 0, 0, 0, 0})
	fifo := &record{Type: typeSpecial, Mode: modeFIFO | 0o644}
	f.Add(k.sealRecord(fifo, "p"), fifo.marshal())
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		k.openRecord(sealed, "p")
		unmarshalRecord(plain, 1) // version 1 is read only: no re-encoding to compare
		for _, v := range []byte{recordVersion, recordVersion3} {
			r, err := unmarshalRecord(plain, v)
			if err == nil && !bytes.Equal(r.marshal(), plain) {
				t.Fatalf("re-encoding differs (version %d)", v)
			}
		}
	})
}
