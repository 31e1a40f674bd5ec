package oblivisync

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// seedVectors adds the published vectors of one type to a fuzz corpus.
func seedVectors(f *testing.F, typ string) {
	raw, err := os.ReadFile(vectorsPath)
	if err != nil {
		f.Fatal(err)
	}
	var vs []vector
	json.Unmarshal(raw, &vs)
	for _, v := range vs {
		if v.Type == typ {
			b, _ := hex.DecodeString(v.Bytes)
			f.Add(b)
		}
	}
}

func FuzzParseKeyFile(f *testing.F) {
	seedVectors(f, "keyfile")
	f.Fuzz(func(t *testing.T, b []byte) {
		parseKeyFile(b)
	})
}

func FuzzDecodeSuper(f *testing.F) {
	seedVectors(f, "superblock")
	f.Fuzz(func(t *testing.T, b []byte) {
		if sb, err := decodeSuper(b, vectorGeometry, 4); err == nil {
			sb.encode(vectorGeometry)
		}
	})
}

func FuzzDecodePage(f *testing.F) {
	seedVectors(f, "page")
	f.Fuzz(func(t *testing.T, b []byte) {
		decodePage(0, b, vectorGeometry, 4)
	})
}

func FuzzDecodeOps(f *testing.F) {
	bt := newBatch(1)
	bt.meta(&node{Ino: 2, Parent: 1, Name: "x", Mode: 0o100644})
	bt.write(2, 10, 5, []byte("data"))
	bt.trunc(2, 3, 1)
	bt.image(2, 0, []byte("img"))
	bt.del(2)
	f.Add(bt.b)
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeOps(b)
	})
}

func FuzzDecodeCheckpoint(f *testing.F) {
	dir := newBackend(f, 4, 4096, 2)
	w := openW(f, dir, f.TempDir())
	a := must(w.Create(rootIno, "f", 0o644, 0, 0))
	must(w.Write(a.Ino, 0, []byte("hello")))
	seed := w.checkpointBody()
	w.Close()
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeCheckpoint(b, vectorGeometry, 4)
	})
}
