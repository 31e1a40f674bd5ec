package dupless

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

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

func genDuplessVectors(t *testing.T) vectors {
	master := bytes.Repeat([]byte{0x42}, MasterKeySize)
	k, _ := deriveUserKeys(master)
	v := vectors{Master: hex.EncodeToString(master), Passphrase: "correct horse battery staple"}
	for _, n := range []string{"a", "report.pdf", "日本語 with spaces", "x.key"} {
		e, err := k.encName(n)
		if err != nil {
			t.Fatal(err)
		}
		v.Names = append(v.Names, nameVector{n, e})
	}
	nonce := bytes.Repeat([]byte{0x07}, recordHeader-1)
	file := &record{Type: typeFile, Mode: 0o644, MTime: 981173106000007000, Size: 7, KeyID: "k1",
		Chunks: []chunkRef{{Flags: flagCompressed, PlainLen: 7, MsgLen: 5}}}
	for i := range file.Chunks[0].Key {
		file.Chunks[0].Key[i], file.Chunks[0].Digest[i], file.Chunks[0].Tag[i] = byte(i), byte(2*i), byte(3*i)
	}
	link := &record{Type: typeSymlink, Mode: 0o777, MTime: 1, Target: "../target"}
	dir := &record{Type: typeDir, Mode: 0o755, MTime: 2}
	for _, r := range []*record{file, link, dir} {
		s := k.sealRecordNonce(r, "ENCDIR/ENCNAME.key", nonce)
		v.Records = append(v.Records, recordVector{EncPath: "ENCDIR/ENCNAME.key", Record: r, Sealed: hex.EncodeToString(s), Result: "ok"})
	}
	good := k.sealRecordNonce(file, "ENCDIR/ENCNAME.key", nonce)
	bad := func(comment, path string, b []byte) {
		v.Records = append(v.Records, recordVector{Comment: comment, EncPath: path, Sealed: hex.EncodeToString(b), Result: "reject"})
	}
	bad("stored under another name", "ENCDIR/OTHER.key", good)
	flipped := bytes.Clone(good)
	flipped[40] ^= 1
	bad("one bit flipped", "ENCDIR/ENCNAME.key", flipped)
	bad("truncated", "ENCDIR/ENCNAME.key", good[:len(good)-1])
	bad("unknown version", "ENCDIR/ENCNAME.key", append([]byte{2}, good[1:]...))
	wrongSize := *file
	wrongSize.Size = 8
	bad("authentic but inconsistent: size does not match chunks", "ENCDIR/ENCNAME.key", k.sealRecordNonce(&wrongSize, "ENCDIR/ENCNAME.key", nonce))
	TestOnlyUseLowCostKDF()
	kf, _ := SealKeyFile(master, []byte(v.Passphrase))
	v.KeyFile = hex.EncodeToString(kf)
	return v
}

func TestDuplessVectors(t *testing.T) {
	var v vectors
	testutil.Vectors(t, vectorFile, &v, func() any { return genDuplessVectors(t) })
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
	nonce := bytes.Repeat([]byte{0x07}, recordHeader-1)
	for i, rv := range v.Records {
		sealed, _ := hex.DecodeString(rv.Sealed)
		r, err := k.openRecord(sealed, rv.EncPath)
		switch rv.Result {
		case "ok":
			if err != nil {
				t.Errorf("record %d: %v", i, err)
				continue
			}
			if !bytes.Equal(k.sealRecordNonce(rv.Record, rv.EncPath, nonce), sealed) {
				t.Errorf("record %d: sealing does not reproduce the vector", i)
			}
			if got, _ := json.Marshal(r); string(got) != string(mustJSON(rv.Record)) {
				t.Errorf("record %d: parsed %s, want %s", i, got, mustJSON(rv.Record))
			}
		case "reject":
			if !errors.Is(err, ErrRecord) {
				t.Errorf("record %d (%s): %v, want ErrRecord", i, rv.Comment, err)
			}
		}
	}
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
	r := &record{Type: typeFile, Size: 3, Chunks: []chunkRef{{PlainLen: 3, MsgLen: 3}}}
	f.Add(k.sealRecord(r, "p"), r.marshal())
	f.Add([]byte{1}, (&record{Type: typeSymlink, Target: "t"}).marshal())
	f.Add([]byte{}, []byte{3, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, sealed, plain []byte) {
		k.openRecord(sealed, "p")
		r, err := unmarshalRecord(plain)
		if err == nil && !bytes.Equal(r.marshal(), plain) {
			t.Fatalf("re-encoding differs")
		}
	})
}
