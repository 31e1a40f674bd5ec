package storeserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// postBatch sends a raw batch body over HTTPS and returns the answer's status, headers
// (without Date) and body.
func postBatch(t *testing.T, url string, cred storewire.Credential, body []byte) (int, http.Header, []byte) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)}}
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/batch", bytes.NewReader(body))
	req.SetBasicAuth(cred.User, cred.Secret)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	resp.Header.Del("Date")
	return resp.StatusCode, resp.Header, b
}

// The answer to a batch is the same whether its content was new to the service or held
// already (by this user or another): status, headers and body.
func TestBatchAnswerSameForNewAndDuplicate(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		url := serve(t, s)
		_, alice := addUser(t, s, "alice")
		_, bob := addUser(t, s, "bob")
		objs := func(dir string) []storage.Object {
			return []storage.Object{{Dir: dir, Name: "a", Data: randBytes(1, 3000)}, {Dir: dir, Name: "b", Data: randBytes(2, 60000)}}
		}
		st1, h1, b1 := postBatch(t, url, alice, storewire.AppendBatch(nil, objs("x")))
		st2, h2, b2 := postBatch(t, url, alice, storewire.AppendBatch(nil, objs("y"))) // duplicate content, same user
		st3, h3, b3 := postBatch(t, url, bob, storewire.AppendBatch(nil, objs("x")))   // duplicate content, another user
		for i, r := range []struct {
			st int
			h  http.Header
			b  []byte
		}{{st2, h2, b2}, {st3, h3, b3}} {
			hj, _ := json.Marshal(r.h)
			h1j, _ := json.Marshal(h1)
			if r.st != st1 || string(hj) != string(h1j) || !bytes.Equal(r.b, b1) {
				t.Fatalf("answer %d differs from the first: %d %s %q vs %d %s %q", i+2, r.st, hj, r.b, st1, h1j, b1)
			}
		}
		if st1 != http.StatusNoContent {
			t.Fatalf("status %d, want 204", st1)
		}
	})
}

// Malformed bodies and bodies past the limits are refused with their code, before
// anything is stored.
func TestBatchRefusedOverHTTP(t *testing.T) {
	s := newTestService(t, Config{MaxBatchObjects: 3, MaxBatchBytes: 100})
	url := serve(t, s)
	ns, cred := addUser(t, s, "alice")
	cases := []struct {
		what string
		body []byte
		code string
	}{
		{"not a batch", []byte("hello"), storewire.CodeBadRequest},
		{"four objects, limit 3", storewire.AppendBatch(nil, make([]storage.Object, 4)), storewire.CodeLimit},
		{"101 bytes, limit 100", storewire.AppendBatch(nil, []storage.Object{{Name: "ok", Data: make([]byte, 60)}, {Name: "f", Data: make([]byte, 41)}}), storewire.CodeLimit},
		{"an object over the batch's bytes", storewire.AppendBatch(nil, []storage.Object{{Name: "f", Data: make([]byte, 101)}}), storewire.CodeTooLarge},
		{"a bad name", storewire.AppendBatch(nil, []storage.Object{{Name: "ok"}, {Dir: "a/..", Name: "f"}}), storewire.CodeInvalidName},
	}
	for _, c := range cases {
		_, _, b := postBatch(t, url, cred, c.body)
		var e storewire.Error
		if json.Unmarshal(b, &e) != nil || e.Code != c.code {
			t.Fatalf("%s: answer %q, want code %s", c.what, b, c.code)
		}
	}
	if infos, _ := ns.List(t.Context(), ""); len(infos) != 0 {
		t.Fatalf("refused batches stored %d entries", len(infos))
	}
}

// One object over 64 KiB goes in a batch (stored as a blob, in the batch's commit); two
// are refused with too_large and store nothing.
func TestBatchLargeObjectsOverHTTP(t *testing.T) {
	s := newTestService(t, Config{})
	url := serve(t, s)
	ns, cred := addUser(t, s, "alice")
	big := bytes.Repeat([]byte("B"), InlineMax+1)
	st, _, b := postBatch(t, url, cred, storewire.AppendBatch(nil, []storage.Object{{Name: "a", Data: big}, {Name: "s", Data: []byte("s")}, {Name: "b", Data: big}}))
	var e storewire.Error
	if json.Unmarshal(b, &e) != nil || e.Code != storewire.CodeTooLarge {
		t.Fatalf("two large objects: %d %q, want code %s", st, b, storewire.CodeTooLarge)
	}
	if infos, _ := ns.List(t.Context(), ""); len(infos) != 0 {
		t.Fatalf("a refused batch stored %d entries", len(infos))
	}
	if st, _, b := postBatch(t, url, cred, storewire.AppendBatch(nil, []storage.Object{{Name: "a", Data: big}, {Name: "s", Data: []byte("s")}})); st != http.StatusNoContent {
		t.Fatalf("one large object: %d %q", st, b)
	}
	if got, err := getBytes(t, ns, "", "a"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("the large object: %d bytes, %v", len(got), err)
	}
	fsckClean(t, s)
}
