package local

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// TestVServerRefusesWrongSizeSealed: a sealed query or publication item of another size
// than the format's one (a client of another veil version) is refused by the V-server
// with a one-line error, before anything is stored or relayed.
func TestVServerRefusesWrongSizeSealed(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	c := newClient(t, d, "judy")
	cred := mustCred(t, c)
	oneLine := func(what string, code int, body []byte) {
		t.Helper()
		if code != http.StatusBadRequest || len(bytes.TrimSpace(body)) == 0 || bytes.Contains(bytes.TrimSpace(body), []byte("\n")) {
			t.Errorf("%s: HTTP %d %q", what, code, body)
		}
	}
	code, body := rawPost(t, cred, "/v1/search", (&wire.Search{Sealed: make([]byte, 2160)}).Marshal())
	oneLine("2160-byte sealed query", code, body)
	before := d.K.Pairs()
	sc, err := wire.SealChunk(c.KServerPub(), []wire.KeyItem{{ID: wire.ID{1}, Key: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := &wire.Publish{Enc: sc.Enc, Pairs: []wire.PublishPair{{ID: wire.ID{1}, Value: []byte("v"), OwnerBlob: []byte("b"), Sealed: sc.Items[0][:528]}}}
	code, body = rawPost(t, cred, "/v1/publish", msg.Marshal())
	oneLine("528-byte sealed item", code, body)
	if list, err := c.List(t.Context()); err != nil || len(list) != 0 || d.K.Pairs() != before {
		t.Errorf("refused publication stored something: %d listed (%v), %d on the K-server", len(list), err, d.K.Pairs())
	}
}
