package storeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// rawDo sends one request with a path exactly as given (no cleaning) as cred, follows no
// redirect, and returns the status and the decoded JSON error (if any).
func rawDo(t *testing.T, url string, cred storewire.Credential, method, path string, body io.Reader) (int, storewire.Error) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsFor(t, cred)},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(method, url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(cred.User, cred.Secret)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e storewire.Error
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		if err := json.Unmarshal(data, &e); err != nil || e.Code == "" {
			t.Fatalf("%s %.80s: %d answer is not the JSON error: %q", method, path, resp.StatusCode, data)
		}
	}
	return resp.StatusCode, e
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// The deep-path request of issue 16: one PUT with 16,000 one-byte components and a 1-byte
// body. Before the limits it answered 201 after 5 s, grew meta.db from 32 KiB to 535 MiB
// and the server's memory by 1.2 GiB. Bound asserted here: 400 limit, meta.db grows by
// less than 64 KiB, and the whole process allocates less than 16 MiB while serving it.
// The same for a single path over 32 KiB (once a 500 from the database's key limit).
func TestDeepPathRefused(t *testing.T) {
	s := newTestService(t, Config{})
	_, cred := addUser(t, s, "alice")
	url := serve(t, s)
	db := filepath.Join(s.dir, dbFile)
	deep := "/v1/files/" + strings.Repeat("a/", 15_999) + "a"
	long := "/v1/files/" + strings.Repeat("b", 40_000)
	for _, p := range []string{deep, long, "/v1/dirs/" + strings.Repeat("c/", 8000) + "c"} {
		before := fileSize(t, db)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		method := "PUT"
		if strings.HasPrefix(p, "/v1/dirs/") {
			method = "POST"
		}
		status, e := rawDo(t, url, cred, method, p, strings.NewReader("x"))
		runtime.ReadMemStats(&m1)
		if status != http.StatusBadRequest || e.Code != storewire.CodeLimit {
			t.Fatalf("%s of %d bytes: %d %+v, want 400 limit", method, len(p), status, e)
		}
		if grew := fileSize(t, db) - before; grew > 64<<10 {
			t.Fatalf("meta.db grew by %d bytes", grew)
		}
		if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 16<<20 {
			t.Fatalf("serving one refused request allocated %d MiB", alloc>>20)
		}
	}
}

// Directories and names count against the quota: with a 1 KiB quota, creating
// directories stops being allowed before their metadata passes 1 KiB (before, two
// 8 KB POST /v1/dirs grew the database to 96 MB under a 1 KiB quota).
func TestQuotaCountsMetadata(t *testing.T) { forEachMeta(t, testQuotaCountsMetadata) }

func testQuotaCountsMetadata(t *testing.T, newService func(testing.TB, Config) *Service) {
	s := newService(t, Config{})
	_, cred := addUser(t, s, "alice", WithQuota(1<<10))
	rb := remoteFor(t, serve(t, s), cred)
	refused := false
	for i := range 100 {
		err := rb.Create(t.Context(), fmt.Sprintf("dir-%03d", i))
		if errors.Is(err, storage.ErrQuota) {
			refused = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !refused {
		t.Fatal("100 directories created under a 1 KiB quota")
	}
	meta, _, err := s.MetaUsage("alice", "")
	if err != nil || meta > 1<<10 || meta == 0 {
		t.Fatalf("metadata bytes %d (%v), want 1..1024", meta, err)
	}
	// Deleting gives the quota back.
	if err := rb.Delete(t.Context(), "", "dir-000"); err != nil {
		t.Fatal(err)
	}
	if err := rb.Create(t.Context(), "new"); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
	fsckClean(t, s)
}

// Entries per directory are bounded, counted exactly through puts, replacements, deletes,
// directory creation and moves.
func TestDirEntriesLimit(t *testing.T) { forEachMeta(t, testDirEntriesLimit) }

func testDirEntriesLimit(t *testing.T, newService func(testing.TB, Config) *Service) {
	s := newService(t, Config{Limits: Limits{MaxDirEntries: 3}})
	_, cred := addUser(t, s, "alice")
	rb := remoteFor(t, serve(t, s), cred)
	for _, n := range []string{"a", "b", "c"} {
		putBytes(t, rb, "d", n, []byte(n))
	}
	if err := rb.Put(t.Context(), "d", "x", strings.NewReader("x"), 1); !errors.Is(err, storewire.ErrLimit) {
		t.Fatalf("fourth entry: %v", err)
	}
	if err := rb.Create(t.Context(), "d/sub"); !errors.Is(err, storewire.ErrLimit) {
		t.Fatalf("fourth entry (a directory): %v", err)
	}
	putBytes(t, rb, "d", "a", []byte("replaced")) // a replacement adds no entry
	if err := rb.Move(t.Context(), "d", "a", "d", "a2"); err != nil {
		t.Fatalf("rename in a full directory: %v", err)
	}
	if err := rb.Move(t.Context(), "d", "a2", "e", "a"); err != nil {
		t.Fatal(err)
	}
	putBytes(t, rb, "d", "x", []byte("x"))
	if err := rb.Move(t.Context(), "e", "a", "d", "y"); !errors.Is(err, storewire.ErrLimit) {
		t.Fatalf("move into a full directory: %v", err)
	}
	// Moving a directory carries its counts: e holds 1 entry, moved under f it still does.
	if err := rb.Move(t.Context(), "", "e", "f", "e"); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := s.MetaUsage("alice", "f/e"); n != 1 {
		t.Fatalf("moved directory counts %d entries, want 1", n)
	}
	if _, n, _ := s.MetaUsage("alice", "e"); n != 0 {
		t.Fatalf("old directory still counts %d entries", n)
	}
	_, root, _ := s.MetaUsage("alice", "")
	if root != 2 { // d and f
		t.Fatalf("root counts %d entries, want 2", root)
	}
	fsckClean(t, s)
}

// A move whose new paths would pass the depth limit is refused whole.
func TestMoveRespectsLimits(t *testing.T) { forEachMeta(t, testMoveRespectsLimits) }

func testMoveRespectsLimits(t *testing.T, newService func(testing.TB, Config) *Service) {
	s := newService(t, Config{Limits: Limits{MaxDepth: 4}})
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, "a/b/c", "f", []byte("x"))
	if err := ns.Move(t.Context(), "", "a", "x/y", "a"); !errors.Is(err, storewire.ErrLimit) {
		t.Fatalf("move making a 6-deep path: %v", err)
	}
	if _, err := ns.Stat(t.Context(), "a/b/c", "f"); err != nil {
		t.Fatalf("refused move changed the tree: %v", err)
	}
	if err := ns.Create(t.Context(), "1/2/3/4/5"); !errors.Is(err, storewire.ErrLimit) {
		t.Fatalf("5-deep directory: %v", err)
	}
}

// Non-canonical paths and names that are not valid UTF-8 are refused with 400 and the
// JSON error, never redirected (Go's ServeMux answered 307 to the cleaned path, and a
// client following it stored under a name it had not sent), and nothing is stored.
func TestNonCanonicalPathsRefused(t *testing.T) {
	s := newTestService(t, Config{})
	ns, cred := addUser(t, s, "alice")
	url := serve(t, s)
	for _, p := range []string{
		"/v1/files/./x", "/v1/files/a/./x", "/v1/files/..", "/v1/files/a/../x", "/v1/files/a/..",
		"/v1/files/a//b", "/v1/files//abs", "/v1/files/a/", "/v1/files/", "/v1/files/%2E%2E/x",
		"/v1/files/%2e", "/v1/files/a%2Fb", "/v1/files/a%00b", "/v1/files/%FF", "/v1/files/a/%C3%28",
		"/v1/dirs/a/", "/v1/dirs//a", "/v1/dirs/a/../b", "/v1/list/a/", "/v1/list//",
		"/v1/stat/a/./b",
	} {
		method := "PUT"
		if strings.HasPrefix(p, "/v1/dirs/") {
			method = "POST"
		} else if strings.HasPrefix(p, "/v1/list/") || strings.HasPrefix(p, "/v1/stat/") {
			method = "GET"
		}
		status, e := rawDo(t, url, cred, method, p, strings.NewReader("x"))
		if status != http.StatusBadRequest || e.Code != storewire.CodeInvalidName {
			t.Errorf("%s %s: %d %+v, want 400 invalid_name", method, p, status, e)
		}
	}
	// Paths the router does not know: JSON 404, not a redirect to a slash-terminated form.
	for _, p := range []string{"/v1/files", "/v1/list", "/v1//files/x", "/v1/move/x", "/v2/files/x", "/"} {
		if status, e := rawDo(t, url, cred, "GET", p, nil); status != http.StatusNotFound || e.Code != storewire.CodeNotFound {
			t.Errorf("GET %s: %d %+v, want 404 not_found", p, status, e)
		}
	}
	if status, e := rawDo(t, url, cred, "PATCH", "/v1/files/x", nil); status != http.StatusMethodNotAllowed || e.Code != storewire.CodeMethod {
		t.Errorf("PATCH: %d %+v, want 405 method", status, e)
	}
	if infos, err := ns.List(t.Context(), ""); err != nil || len(infos) != 0 {
		t.Fatalf("refused requests stored %v (%v)", infos, err)
	}
	if err := ns.Put(t.Context(), "", "\xff", strings.NewReader("x"), 1); !errors.Is(err, storage.ErrInvalidName) {
		t.Fatalf("in-process put of an invalid UTF-8 name: %v", err)
	}
	// A canonical escaped name round-trips.
	if status, _ := rawDo(t, url, cred, "PUT", "/v1/files/a%20b/c%25d", strings.NewReader("x")); status != http.StatusCreated {
		t.Fatalf("escaped names: %d", status)
	}
	if _, err := ns.Stat(t.Context(), "a b", "c%d"); err != nil {
		t.Fatal(err)
	}
}
