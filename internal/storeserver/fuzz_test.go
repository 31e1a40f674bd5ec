package storeserver

import (
	"bytes"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// FuzzHandler sends arbitrary authenticated requests (as a user, or as the admin when the
// method byte's high bit is set) (method, path, query, declared length,
// body) to the HTTP API in-process: it must never panic, must answer every request with a
// status (errors as one JSON error body), and must keep the store consistent.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(0), "/v1/files/a/b", "", "", []byte("hello"))
	f.Add(uint8(1), "/v1/files/a/b", "", "", []byte{})
	f.Add(uint8(2), "/v1/files/a", "", "", []byte{})
	f.Add(uint8(3), "/v1/list/", "", "", []byte{})
	f.Add(uint8(3), "/v1/search/a", "name=b", "", []byte{})
	f.Add(uint8(3), "/v1/stat/a/b", "", "", []byte{})
	f.Add(uint8(4), "/v1/dirs/x/y%20z", "", "", []byte{})
	f.Add(uint8(4), "/v1/move", "", "", []byte(`{"src_dir":"a","src_name":"b","dst_dir":"c","dst_name":"d"}`))
	f.Add(uint8(4), "/v1/move", "", "", []byte(`{"src_dir":"a","src_name":"b"}{}`))
	f.Add(uint8(0), "/v1/files/%00/x", "", "5", []byte("12345"))
	f.Add(uint8(0), "/v1/files/../x", "", "-1", []byte("x"))
	f.Add(uint8(0), "/v1/files/big", "", "99999999999999999999", []byte("x"))
	f.Add(uint8(3), "/v1/stats", "", "", []byte{})
	f.Add(uint8(0x84), "/v1/users", "", "", []byte(`{"name":"bob","quota":5}`))
	f.Add(uint8(0x84), "/v1/users", "", "", []byte(`{"name":"Bad Name"}`))
	f.Add(uint8(0x83), "/v1/users", "", "", []byte{})
	f.Add(uint8(0x82), "/v1/users/bob", "", "", []byte{})
	f.Add(uint8(0x84), "/v1/gc", "", "", []byte{})
	f.Add(uint8(0xc0), "/v1/users/fuzz", "", "", []byte(`{"quota":5}`))
	f.Add(uint8(0xc0), "/v1/users/fuzz", "", "", []byte(`{"quota":-1}`))
	f.Add(uint8(1), "/readyz", "", "", []byte{})
	f.Add(uint8(4), "/v1/batch", "", "", storewire.AppendBatch(nil, []storage.Object{{Dir: "d", Name: "a", Data: []byte("small")}}))
	f.Add(uint8(4), "/v1/batch", "", "", storewire.AppendBatch(nil, []storage.Object{{Dir: "d", Name: "s", Data: []byte("s")},
		{Dir: "d", Name: "big", Data: bytes.Repeat([]byte("L"), InlineMax+10), Create: true}})) // the one large object
	small := sha256.Sum256([]byte("small"))
	f.Add(uint8(4), "/v1/batch", "", "", storewire.AppendBatch(nil, []storage.Object{{Dir: "d", Name: "m", Absent: true},
		{Dir: "d", Name: "a", Data: []byte("new"), Match: &small}})) // version 4: holds after the first batch
	// One service for every input (and per fuzzing worker), in the fuzz test's own temp
	// dir: a directory of os.MkdirTemp was left in /tmp by every run.
	dir := f.TempDir()
	if err := Init(dir); err != nil {
		f.Fatal(err)
	}
	s, err := Open(dir, Config{MaxObjectSize: 1 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	cred, _ := s.AddUser("fuzz")
	admin, _ := storewire.LoadCredential(dir + "/" + AdminCredentialFile)
	f.Fuzz(func(t *testing.T, method uint8, path, query, declared string, body []byte) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t?#") || strings.ContainsAny(query, " \r\n\t#") {
			return // not a request line a client can send
		}
		m := []string{"PUT", "GET", "DELETE", "HEAD", "POST"}[method%5]
		if method&0x40 != 0 {
			m = "PATCH" // a user's quota (session 16)
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		req, err := http.NewRequest(m, "http://store"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		if declared != "" {
			if strings.ContainsAny(declared, "\r\n\x00") {
				return
			}
			req.Header.Set(storewire.HeaderDeclaredLength, declared)
			req.ContentLength = -1
		}
		if method&0x80 != 0 { // the admin's routes
			req.SetBasicAuth(admin.User, admin.Secret)
		} else {
			req.SetBasicAuth(cred.User, cred.Secret)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code < 200 || w.Code > 599 {
			t.Fatalf("status %d", w.Code)
		}
		if w.Code >= 400 && w.Code != 404 && w.Code != 405 && w.Code != 301 && !strings.Contains(w.Body.String(), `"code"`) {
			t.Fatalf("%s %s: error %d without a JSON body: %q", m, target, w.Code, w.Body.String())
		}
		if w.Code == 500 {
			t.Fatalf("%s %s: internal error: %s", m, target, w.Body.String())
		}
	})
}
