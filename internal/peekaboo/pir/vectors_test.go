package pir

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/dpf"
	"github.com/veil-project/veil/internal/testutil"
)

// testdata/peekaboo/pir-table.json pins docs/formats/peekaboo-pir.md: the material derived
// from fixed keys, the slot of a fixed pair id, and a whole bucket (sorted slots, zeros,
// digest) of a small table.

const vectorFile = "../../../testdata/peekaboo/pir-table.json"

type slotVec struct {
	Key  string `json:"key"`
	ID   string `json:"id"`
	Hash uint32 `json:"hash"`
	Tag  string `json:"tag"`
	Slot string `json:"slot"`
}

type tableVectors struct {
	Slots  []slotVec `json:"slots"`
	Params Params    `json:"params"`
	Bucket uint32    `json:"bucket"`
	Bytes  string    `json:"bucket_bytes"`
}

var vecParams = Params{Bits: 4, Slots: 4}

func vecTable() (*Table, []slotVec) {
	t, _ := NewTable(vecParams)
	var out []slotVec
	for i, k := range []string{"report.pdf", "report.pdf", "holiday.jpg", "é-ü.txt"} {
		m := Derive(k)
		e := m.Seal(id(i))
		t.Insert(e)
		idb := id(i)
		out = append(out, slotVec{Key: k, ID: hex.EncodeToString(idb[:]), Hash: e.Hash, Tag: hex.EncodeToString(m.Tag[:]), Slot: hex.EncodeToString(e.Slot[:])})
	}
	return t, out
}

func TestVectors(t *testing.T) {
	tb, slots := vecTable()
	b := Derive("report.pdf").Bucket(vecParams.Bits)
	var v tableVectors
	testutil.Vectors(t, vectorFile, &v, func() any {
		return tableVectors{Slots: slots, Params: vecParams, Bucket: b, Bytes: hex.EncodeToString(tb.Bucket(b))}
	})
	if len(v.Slots) != len(slots) || v.Params != vecParams || v.Bucket != b {
		t.Fatal("vector file does not match")
	}
	for i, s := range v.Slots {
		if s != slots[i] {
			t.Errorf("slot %d (%q) differs from the vector", i, s.Key)
		}
	}
	if hex.EncodeToString(tb.Bucket(b)) != v.Bytes {
		t.Error("bucket bytes differ from the vector")
	}
	// Reading the pinned bucket as one answer (the other all zeros) finds both ids.
	ids, err := Derive("report.pdf").Find(vecParams, testutil.Unhex(t, v.Bytes), make([]byte, vecParams.BucketSize()))
	if err != nil || len(ids) != 2 {
		t.Fatalf("find in the vector bucket: %v %v", ids, err)
	}
}

// FuzzFind: any pair of answers either reconstructs a bucket that passes every check or
// fails with ErrIntegrity; never a panic.
func FuzzFind(f *testing.F) {
	tb, _ := vecTable()
	m := Derive("report.pdf")
	k0, k1, _ := dpf.Gen(uint64(m.Bucket(vecParams.Bits)), vecParams.Bits, testRandReader{})
	a0, _ := tb.Answer(k0)
	a1, _ := tb.Answer(k1)
	f.Add(a0, a1)
	f.Add(a0[:10], a1)
	f.Fuzz(func(t *testing.T, x, y []byte) {
		if _, err := m.Find(vecParams, x, y); err != nil && !errors.Is(err, ErrIntegrity) {
			t.Fatalf("error not ErrIntegrity: %v", err)
		}
	})
}

type testRandReader struct{}

func (testRandReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}
