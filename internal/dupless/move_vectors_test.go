package dupless

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

const moveMarkVectorFile = "../../testdata/dupless/move-marks.json"

// moveMarkVector is one move mark: a folder mv's encrypted source and destination paths,
// the mark's object name, and a mark sealed for it (master key 0x42...).
type moveMarkVector struct {
	Src    string `json:"src"`
	Dst    string `json:"dst"`
	Object string `json:"object"` // .veil/moves/<hex SHA-256("veil/v1 move" 0 src 0 dst)>
	Sealed string `json:"sealed"` // the key record of type 3 sealed for Object (nonce 0x07...)
}

// TestMoveMarkVectors pins the move mark (docs/formats/key-record.md, "Move marks"): its
// name for given encrypted paths, and that a sealed mark opens as a folder record under its
// own path only.
func TestMoveMarkVectors(t *testing.T) {
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	var v []moveMarkVector
	testutil.Vectors(t, moveMarkVectorFile, &v, func() any {
		var out []moveMarkVector
		for _, plain := range [][2]string{{"Documents", "Archive/Documents"}, {"a/b", "c"}} {
			s, _ := k.encPath(plain[0])
			d, _ := k.encPath(plain[1])
			obj := storage.Join(movesDir, moveMark(s, d))
			b := k.sealRecordNonce(&record{Type: typeDir}, obj, bytes.Repeat([]byte{7}, recordHeader-1))
			out = append(out, moveMarkVector{s, d, obj, hex.EncodeToString(b)})
		}
		return out
	})
	if len(v) != 2 {
		t.Fatalf("%d move mark vectors", len(v))
	}
	for i, mv := range v {
		if got := storage.Join(movesDir, moveMark(mv.Src, mv.Dst)); got != mv.Object {
			t.Errorf("vector %d: mark %s, want %s", i, got, mv.Object)
		}
		b := testutil.Unhex(t, mv.Sealed)
		if r, err := k.openRecord(b, mv.Object); err != nil || r.Type != typeDir || len(r.Chunks) != 0 {
			t.Errorf("vector %d: the mark does not open under its path: %+v %v", i, r, err)
		}
		if _, err := k.openRecord(b, v[1-i].Object); err == nil {
			t.Errorf("vector %d opens under another mark's path", i)
		}
	}
}
