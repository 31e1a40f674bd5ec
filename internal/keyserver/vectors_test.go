package keyserver

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"
)

// testdata/ks/dir holds ks.json and clients.json as init, client add and revoke wrote them;
// they must load and re-encode byte for byte (docs/formats/ks-dir.md).
func TestDirVectors(t *testing.T) {
	dir := "../../testdata/ks/dir"
	m, err := readMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := readRegistry(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Clients) != 2 || reg.Clients[1].Revoked == nil || m.Suite != "ristretto255" {
		t.Fatalf("unexpected vector contents: %+v %+v", m, reg)
	}
	for file, v := range map[string]any{fileMeta: m, fileClients: reg} {
		want, _ := os.ReadFile(dir + "/" + file)
		got, _ := json.MarshalIndent(v, "", "  ")
		if !bytes.Equal(append(got, '\n'), want) {
			t.Fatalf("%s does not re-encode byte for byte", file)
		}
	}
	// The bbolt value layout.
	if got := hex.EncodeToString(pair(1234, 56)); got != "00000000000004d20000000000000038" {
		t.Fatalf("pair encoding: %s", got)
	}
	if a, b, ok := unpair(pair(-1, 7)); !ok || a != -1 || b != 7 {
		t.Fatal("pair does not round-trip")
	}
	if _, _, ok := unpair(make([]byte, 15)); ok {
		t.Fatal("a 15-byte value was accepted")
	}
}
