package server

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/veil-project/veil/internal/metal/access"
)

// GET /v1/info is unauthenticated and answered on every client connect. It must not load
// the whole reactive state (every tree share, ~0.45 GB per server at 2^20 files): any
// client could otherwise make the server allocate that much per request, and a few hundred
// concurrent requests exhaust its memory.
func TestInfoDoesNotLoadTrees(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s2")
	p := access.Params{D: 16, Stash: 33, BlockSize: 64, FilesPerAccount: 2, Pack: 3, Base: 10}
	if err := Init(dir, InitOptions{Role: 2, Endpoint: "https://127.0.0.1:1", Params: p}); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	info := func() []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/info", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/v1/info: %d %s", rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}
	want := info()
	if len(want) != access.ParamsLen+64 {
		t.Fatalf("/v1/info of %d bytes", len(want))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := info()
	runtime.ReadMemStats(&after)
	if string(got) != string(want) {
		t.Fatal("/v1/info changed between two calls")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("one unauthenticated GET /v1/info allocated %d bytes (the whole state's tree shares)", n)
	}
}
