package storeserver

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// brokenBody delivers some bytes, then fails as a body whose client went away does.
type brokenBody struct{ n int }

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	k := min(len(p), b.n)
	b.n -= k
	return k, nil
}

// A client that disconnects mid-upload is logged at debug level, not as an ERROR
// "internal error" (issue 16, item 6).
func TestDisconnectNotAnError(t *testing.T) {
	var logs syncBuf
	s := newTestService(t, Config{Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, cred := addUser(t, s, "alice")
	for _, size := range []int{1000, 200 << 10} { // inline and blob paths
		req := httptest.NewRequest("PUT", "/v1/files/f", io.NopCloser(&brokenBody{n: size / 2}))
		req.ContentLength = int64(size)
		req.SetBasicAuth(cred.User, cred.Secret)
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code == http.StatusCreated || w.Code == http.StatusInternalServerError {
			t.Fatalf("broken body of %d: %d %s", size, w.Code, w.Body)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) || !strings.Contains(logs.String(), "client disconnected") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

// fsck --json keys are snake_case like every other JSON of the store.
func TestFsckJSONKeys(t *testing.T) {
	b, _ := json.Marshal(FsckReport{})
	if b, _ := json.Marshal(fsckClean(t, newTestService(t, Config{}))); !bytes.Contains(b, []byte(`"problems":[]`)) {
		t.Fatalf("a clean fsck in JSON: %s", b)
	}
	for _, k := range []string{`"problems"`, `"orphan_blobs"`, `"stale_uploads"`, `"garbage_blobs"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Fatalf("fsck JSON %s lacks %s", b, k)
		}
	}
}
