package local

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/client"
	"github.com/veil-project/veil/internal/peekaboo/tlsconf"
	"github.com/veil-project/veil/internal/peekaboo/vserver"
	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// rawPost sends body to the V-server as the user of cred, bypassing the client library
// (a malicious client builds whatever message it likes).
func rawPost(t *testing.T, cred []byte, path string, body []byte) (int, []byte) {
	t.Helper()
	uc, _, err := wire.ParseUserCred(cred)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := tlsconf.ClientConfig([]byte(uc.CA), nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, uc.Endpoint+path, bytes.NewReader(body))
	req.SetBasicAuth(uc.User, uc.Secret)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestPublishCannotRebindAnotherOwnersPair: a malicious client publishes a pair whose
// clear id (checked by the V-server for ownership) is its own but whose sealed item (read
// only by the K-server) names another owner's pair id. The K-server must not replace the
// victim's key: the victim's pair must still match its key, and the attacker's key must
// not release the victim's value.
func TestPublishCannotRebindAnotherOwnersPair(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	ctx := context.Background()
	alice, mallory := newClient(t, d, "alice"), newClient(t, d, "mallory")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "alice-report.pdf", Value: []byte("host-a:/secret")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	// Mallory learns the victim pair's id from an ordinary search result.
	r := search(t, mallory, "alice-report.pdf", client.SearchOptions{})
	if len(r.Found) != 1 {
		t.Fatalf("setup: %d results", len(r.Found))
	}
	victim := r.Found[0].ID

	var own wire.ID
	own[0], own[15] = 0xee, 0xee
	sc, err := wire.SealChunk(mallory.KServerPub(), []wire.KeyItem{{ID: victim, Key: "mallory-chosen"}})
	if err != nil {
		t.Fatal(err)
	}
	msg := &wire.Publish{Enc: sc.Enc, Pairs: []wire.PublishPair{{ID: own, Value: []byte("x"), OwnerBlob: []byte("junk"), Sealed: sc.Items[0]}}}
	code, body := rawPost(t, mustCred(t, mallory), "/v1/publish", msg.Marshal())
	t.Logf("malicious publish: HTTP %d %s", code, bytes.TrimSpace(body))

	if r := search(t, alice, "alice-report.pdf", client.SearchOptions{}); len(r.Found) != 1 {
		t.Errorf("victim's pair no longer matches its own key: %d results", len(r.Found))
	}
	if r := search(t, mallory, "mallory-chosen", client.SearchOptions{}); len(r.Found) != 0 {
		t.Errorf("attacker's key releases the victim's value: %q", r.Found[0].Value)
	}
}

// TestRepublishRefusedLosesNothing: an owner publishing one of its own pair ids again (a
// hand-made client: the library draws fresh ids) is refused by the V-server before it
// stores anything, with an error saying to unpublish and publish again. Before, the
// V-server replaced the pair's value, ACL and owner blob, the K-server then refused the
// chunk (it never replaces a key: docs/design-peekaboo.md, "Publication"), and the pair
// was left with the new value under the old key and an owner blob that did not open.
func TestRepublishRefusedLosesNothing(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "alice-key", Value: []byte("old")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	l, err := alice.List(ctx)
	if err != nil || len(l) != 1 {
		t.Fatalf("setup: %v %v", l, err)
	}
	id := l[0].ID
	for _, ids := range [][]wire.ID{{id}, {{0xdd, 1}, {0xdd, 1}}} { // published before; twice in one chunk
		var items []wire.KeyItem
		var pairs []wire.PublishPair
		for _, id := range ids {
			items = append(items, wire.KeyItem{ID: id, Key: "alice-new"})
			pairs = append(pairs, wire.PublishPair{ID: id, Value: []byte("new"), OwnerBlob: []byte("junk")})
		}
		sc, err := wire.SealChunk(alice.KServerPub(), items)
		if err != nil {
			t.Fatal(err)
		}
		for i := range pairs {
			pairs[i].Sealed = sc.Items[i]
		}
		msg := &wire.Publish{Enc: sc.Enc, Pairs: pairs}
		code, body := rawPost(t, mustCred(t, alice), "/v1/publish", msg.Marshal())
		if code != http.StatusConflict || !bytes.Contains(body, []byte("unpublish it and publish it again")) {
			t.Errorf("republish of %x: HTTP %d %s", ids[0][:4], code, bytes.TrimSpace(body))
		}
	}
	l, err = alice.List(ctx)
	if err != nil || len(l) != 1 || l[0].Key != "alice-key" || string(l[0].Value) != "old" {
		t.Fatalf("the owner's pairs after refused republications: %v %v", l, err)
	}
	if r := search(t, alice, "alice-key", client.SearchOptions{}); len(r.Found) != 1 || string(r.Found[0].Value) != "old" {
		t.Fatalf("search after refused republications: %+v", r.Found)
	}
}

// countingReader counts the bytes a handler reads of a request body.
type countingReader struct{ n, limit int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.limit {
		return 0, io.EOF
	}
	k := min(len(p), c.limit-c.n)
	c.n += k
	return k, nil
}

// TestUnauthenticatedBodyNotRead: the V-server must refuse a request without valid
// credentials before it reads (and buffers, up to MaxBody) its body, so that anyone who
// can reach it cannot make it hold MaxBody bytes per connection.
func TestUnauthenticatedBodyNotRead(t *testing.T) {
	d := start(t, t.TempDir(), fastMix())
	body := &countingReader{limit: 8 << 20}
	req := httptest.NewRequest(http.MethodPost, "/v1/publish", body)
	req.SetBasicAuth("nobody", "AAAA")
	w := httptest.NewRecorder()
	d.V.Handler().ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("HTTP %d", w.Code)
	}
	if body.n > 0 {
		t.Errorf("read %d body bytes of an unauthenticated request", body.n)
	}
}

// TestUnpublishRetryableAfterRelayFailure: an unpublication whose relay to the K-server
// fails is reported as failed; when the owner runs it again with the K-server back, the
// key must leave the K-server (the owner has no other way to remove it from there).
func TestUnpublishRetryableAfterRelayFailure(t *testing.T) {
	dir := t.TempDir()
	d := start(t, dir, fastMix())
	ctx := context.Background()
	alice := newClient(t, d, "alice")
	if _, err := alice.Publish(ctx, []client.Pair{{Key: "to-remove.txt", Value: []byte("v")}}, 0, nil); err != nil {
		t.Fatal(err)
	}
	l, err := alice.List(ctx)
	if err != nil || len(l) != 1 {
		t.Fatalf("list: %v %d", err, len(l))
	}
	pair := l[0].ID
	cred := mustCred(t, alice)
	stop(t, d)

	// The K-server cannot be reached in time: the unpublication fails.
	d = start(t, dir, Options{V: vserver.Config{MaxDelay: time.Millisecond, RelayTimeout: time.Nanosecond}})
	a, _ := client.New(cred)
	if _, err := a.Unpublish(ctx, "to-remove.txt", nil); err == nil {
		t.Fatal("unpublish with the K-server unreachable succeeded")
	}
	a.Close()
	stop(t, d)

	// The owner tries again once the K-server is back.
	d = start(t, dir, fastMix())
	a, _ = client.New(cred)
	defer a.Close()
	n, err := a.Unpublish(ctx, "to-remove.txt", nil)
	t.Logf("retry: removed %d, err %v", n, err)
	if d.K.Has(pair) {
		t.Error("the K-server still holds the key after the owner's retried unpublish; the owner cannot remove it any more")
	}
}
