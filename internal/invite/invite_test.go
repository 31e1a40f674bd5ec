package invite

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storewire"
)

func TestRoundTripAndRejects(t *testing.T) {
	in := &Invite{User: "alice", Storage: "veil://127.0.0.1:7480", Store: &storewire.Credential{User: "alice", Secret: "s"},
		KSCredential: []byte(`{"x":1}`)}
	b, err := in.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Parse(b)
	var ks bytes.Buffer
	json.Compact(&ks, out.KSCredential)
	if err != nil || out.User != "alice" || out.Store.Secret != "s" || ks.String() != `{"x":1}` {
		t.Fatalf("round trip: %+v %v", out, err)
	}
	for _, bad := range []string{"", "{}", `{"veil_invite":2,"storage":"x"}`, `{"veil_invite":1}`, "not json"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("multi-line error for %q", bad)
		}
	}
}

// TestVector parses the published example invitation byte for byte as documented.
func TestVector(t *testing.T) {
	b, err := os.ReadFile("../../testdata/invite/alice.invite")
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if inv.User != "alice" || inv.Storage != "veil://127.0.0.1:7480" || inv.Store == nil ||
		inv.Store.User != "alice" || inv.Store.Endpoint != "https://127.0.0.1:7480" || len(inv.KSCredential) == 0 {
		t.Fatalf("parsed %+v", inv)
	}
}
