package dupless

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

const moveMarkVectorFile = "../../testdata/dupless/move-marks.json"

// moveMarkVector is one move mark: a folder mv's plain and encrypted source and
// destination paths, the mark's object name, and the mark sealed for it (master key
// 0x42..., nonce 0x07...) as this veil writes it (naming the folders: running, and settled)
// and as session 13's did (naming none).
type moveMarkVector struct {
	SrcPath string `json:"src_path"` // plain, as the mark names it
	DstPath string `json:"dst_path"`
	Src     string `json:"src"` // encrypted
	Dst     string `json:"dst"`
	Object  string `json:"object"`  // .veil/moves/<hex SHA-256("veil/v1 move" 0 src 0 dst)>
	Sealed  string `json:"sealed"`  // session 13's mark: a key record of type 3, no target
	Named   string `json:"named"`   // this veil's: its target src_path 0x00 dst_path, mode 0 (running)
	Settled string `json:"settled"` // the same, mode 1 (settled), sealed for SettledObject
	// SettledObject is where a settled mark lives: .veil/moves-settled/<the same name>
	SettledObject string `json:"settled_object"`
}

// TestMoveMarkVectors pins the move mark (docs/formats/key-record.md, "Move marks"): its
// name for given encrypted paths; that a sealed mark opens as a folder record under its own
// path only; that this veil's names its folders and an older one's (still read) none.
func TestMoveMarkVectors(t *testing.T) {
	c := &Client{}
	c.keys, _ = deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	k := c.keys
	var v []moveMarkVector
	testutil.Vectors(t, moveMarkVectorFile, &v, func() any {
		var out []moveMarkVector
		for _, plain := range [][2]string{{"Documents", "Archive/Documents"}, {"a/b", "c"}} {
			s, _ := k.encPath(plain[0])
			d, _ := k.encPath(plain[1])
			obj := storage.Join(movesDir, moveMark(s, d))
			nonce := bytes.Repeat([]byte{7}, recordHeader-1)
			old := k.sealRecordNonce(&record{Type: typeDir}, obj, nonce)
			named := k.sealRecordNonce(markRecord(plain[0], plain[1], false), obj, nonce)
			sobj := storage.Join(settledDir, moveMark(s, d))
			settled := k.sealRecordNonce(markRecord(plain[0], plain[1], true), sobj, nonce)
			out = append(out, moveMarkVector{plain[0], plain[1], s, d, obj, hex.EncodeToString(old), hex.EncodeToString(named), hex.EncodeToString(settled), sobj})
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
		if got := storage.Join(settledDir, moveMark(mv.Src, mv.Dst)); got != mv.SettledObject {
			t.Errorf("vector %d: settled mark %s, want %s", i, got, mv.SettledObject)
		}
		_, name := storage.Split(mv.Object)
		for _, sealed := range []struct {
			hex, object string
			src, dst    string
			settled     bool
		}{{mv.Sealed, mv.Object, "", "", false}, {mv.Named, mv.Object, mv.SrcPath, mv.DstPath, false},
			{mv.Settled, mv.SettledObject, mv.SrcPath, mv.DstPath, true}} {
			b := testutil.Unhex(t, sealed.hex)
			r, err := k.openRecord(b, sealed.object)
			if err != nil {
				t.Fatalf("vector %d: the mark does not open under its path: %v", i, err)
			}
			if m, ok := c.parseMark(name, r); !ok || m.Src != sealed.src || m.Dst != sealed.dst || m.Settled != sealed.settled {
				t.Errorf("vector %d: the mark names %q -> %q, settled %v (ok %v), want %q -> %q, %v", i, m.Src, m.Dst, m.Settled, ok, sealed.src, sealed.dst, sealed.settled)
			}
			if _, err := k.openRecord(b, v[1-i].Object); err == nil {
				t.Errorf("vector %d opens under another mark's path", i)
			}
			_, other := storage.Split(v[1-i].Object)
			if _, ok := c.parseMark(other, r); ok && sealed.src != "" { // names that do not make its name
				t.Errorf("vector %d: its names taken for another mark's", i)
			}
		}
	}
}
