package dupless

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

const keptVectorFile = "../../testdata/dupless/kept-versions.json"

// keptVector names the kept-version object of one records-v2.json vector.
type keptVector struct {
	Record int    `json:"record"` // index into records-v2.json
	Object string `json:"object"` // .veil/versions/<hh>/<sha256 hex of the sealed record>
}

// TestKeptVersionVectors pins where a replaced record is kept (docs/formats/key-record.md,
// "Kept versions"): its name is the SHA-256 of its bytes, and the bytes still open only
// under the record's own path.
func TestKeptVersionVectors(t *testing.T) {
	var recs []recordVector
	testutil.Vectors(t, recordVectorFile, &recs, func() any { return genRecordVectors(t) })
	var v []keptVector
	testutil.Vectors(t, keptVectorFile, &v, func() any {
		var out []keptVector
		for i, r := range recs {
			if r.Result == "ok" {
				b, _ := hex.DecodeString(r.Sealed)
				d, n := versionLocation(sha256.Sum256(b))
				out = append(out, keptVector{i, storage.Join(d, n)})
			}
		}
		return out
	})
	if len(v) == 0 {
		t.Fatal("no kept-version vectors")
	}
	k, _ := deriveUserKeys(bytes.Repeat([]byte{0x42}, MasterKeySize))
	for _, kv := range v {
		r := recs[kv.Record]
		b, _ := hex.DecodeString(r.Sealed)
		if d, n := versionLocation(sha256.Sum256(b)); storage.Join(d, n) != kv.Object {
			t.Errorf("record %d kept as %s, want %s", kv.Record, storage.Join(d, n), kv.Object)
		}
		if _, err := k.openRecord(b, r.EncPath); err != nil {
			t.Errorf("kept record %d does not open under its path: %v", kv.Record, err)
		}
		if _, err := k.openRecord(b, kv.Object); err == nil {
			t.Errorf("kept record %d opens under its kept name: the path binding is lost", kv.Record)
		}
	}
}
