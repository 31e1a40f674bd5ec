package storeserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/veil-project/veil/internal/storage"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storewire"
)

// rawTarget sends method with the request-target exactly as given (not re-escaped by the
// client) and returns the status and JSON error.
func rawTarget(t *testing.T, base string, cred storewire.Credential, method, target string, body string) (int, storewire.Error) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(method, base, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL = &url.URL{Scheme: u.Scheme, Host: u.Host, Opaque: target}
	req.SetBasicAuth(cred.User, cred.Secret)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e storewire.Error
	if resp.StatusCode >= 300 {
		decodeErr(resp, &e)
	}
	return resp.StatusCode, e
}

func TestEscapedSlashBesideRawCharRefused(t *testing.T) {
	s := newTestService(t, Config{})
	ns, cred := addUser(t, s, "alice")
	u := serve(t, s)
	for _, p := range []string{"/v1/files/a%2Fb|", "/v1/files/a%2Fb{", "/v1/files/a%2F\xc3\xa9"} {
		status, e := rawTarget(t, u, cred, "PUT", p, "x")
		if status != http.StatusBadRequest || e.Code != storewire.CodeInvalidName {
			t.Errorf("PUT %q: %d %+v, want 400 invalid_name", p, status, e)
		}
	}
	if infos, err := ns.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Fatalf("refused requests stored %v (%v)", infos, err)
	}
}

func decodeErr(resp *http.Response, e *storewire.Error) {
	_ = jsonDecode(resp, e)
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }

// A move body with trailing data, or longer than 64 KiB, is 400 bad_request (store-api.md,
// "JSON bodies"), and nothing moves.
func TestMoveBodyTrailingDataRefused(t *testing.T) {
	s := newTestService(t, Config{})
	ns, cred := addUser(t, s, "alice")
	putBytes(t, ns, "", "a", []byte("x"))
	obj := `{"src_dir":"","src_name":"a","dst_dir":"","dst_name":"b"}`
	for name, body := range map[string]string{
		"closing bracket": obj + "]",
		"closing brace":   obj + "}",
		"past 64 KiB":     obj + strings.Repeat(" ", maxJSONBody) + "garbage",
		"long body":       obj + strings.Repeat(" ", maxJSONBody),
	} {
		req := httptest.NewRequest("POST", "/v1/move", strings.NewReader(body))
		req.SetBasicAuth(cred.User, cred.Secret)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), storewire.CodeBadRequest) {
			t.Errorf("%s: %d %s, want 400 bad_request", name, w.Code, w.Body.String())
		}
	}
	if _, err := ns.Stat(t.Context(), "", "a"); err != nil {
		t.Fatalf("a refused move moved the file: %v", err)
	}
}

// An upload authenticated as a user who is then removed must not land in the namespace of
// a new user given the same name meanwhile (a different person, with a new secret).
func TestRemovedUsersUploadNotInNewNamesake(t *testing.T) {
	s := newTestService(t, Config{})
	_, old := addUser(t, s, "carol")
	pr, pw := io.Pipe()
	req := httptest.NewRequest("PUT", "/v1/files/planted", pr)
	req.Header.Set(storewire.HeaderDeclaredLength, "10")
	req.ContentLength = -1
	req.SetBasicAuth(old.User, old.Secret)
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { s.Handler().ServeHTTP(w, req); close(done) }()
	if _, err := pw.Write([]byte("01234")); err != nil { // returns once the handler reads: authenticated
		t.Fatal(err)
	}
	if err := s.RemoveUser("carol"); err != nil {
		t.Fatal(err)
	}
	fresh, _ := addUser(t, s, "carol")
	pw.Write([]byte("56789"))
	pw.Close()
	<-done
	if infos, err := fresh.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Fatalf("the removed user's upload (answer %d) is in the new carol's namespace: %v (%v)", w.Code, infos, err)
	}
}

// A put refused by the quota leaves nothing behind: no content file in the blob store.
// Before, the content was committed to blobs/ before the quota check, so a user past their
// quota could fill the service's disk with orphans (each up to --max-object-size, kept
// until an admin runs gc) at the cost of every other user.
func TestQuotaRefusedPutLeavesNoBlob(t *testing.T) {
	s := newTestService(t, Config{})
	ns, _ := addUser(t, s, "alice", WithQuota(64<<10))
	big := bytes.Repeat([]byte("q"), InlineMax+1000)
	for _, size := range []int64{int64(len(big)), -1} { // declared, unknown
		err := ns.Put(t.Context(), "", "big", bytes.NewReader(big), size)
		if !errors.Is(err, storage.ErrQuota) {
			t.Fatalf("put past the quota (size %d): %v", size, err)
		}
	}
	err := ns.PutBatch(t.Context(), []storage.Object{{Name: "s", Data: []byte("s")}, {Name: "big", Data: big}})
	if !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("batch past the quota: %v", err)
	}
	rep, err := s.Fsck(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanBlobs != 0 || rep.StaleUploads != 0 {
		t.Fatalf("refused puts left %d content files and %d temp files", rep.OrphanBlobs, rep.StaleUploads)
	}
}

// gatedReader yields data once gate is closed.
type gatedReader struct {
	gate <-chan struct{}
	r    io.Reader
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.gate
	return g.r.Read(p)
}

// Concurrent puts that the quota can take only one of leave no content behind either: the
// quota check before the content is committed counts the uploads in flight.
func TestQuotaConcurrentPutsLeaveNoBlob(t *testing.T) {
	s := newTestService(t, Config{})
	ns, _ := addUser(t, s, "alice", WithQuota(150<<10))
	gate := make(chan struct{})
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		data := randBytes(uint64(100+i), 100<<10)
		go func() {
			errs <- ns.Put(t.Context(), "", fmt.Sprint("f", i), &gatedReader{gate, bytes.NewReader(data)}, -1)
		}()
	}
	time.Sleep(100 * time.Millisecond)
	close(gate)
	ok := 0
	for range n {
		if err := <-errs; err == nil {
			ok++
		} else if !errors.Is(err, storage.ErrQuota) {
			t.Fatal(err)
		}
	}
	rep, err := s.Fsck(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 || rep.OrphanBlobs != 0 {
		t.Fatalf("%d puts stored, %d refused puts left content files", ok, rep.OrphanBlobs)
	}
}
