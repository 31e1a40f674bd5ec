package storeserver

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
	"github.com/veil-project/veil/internal/testutil"
)

// smallFS mounts a tmpfs of size bytes for the test (root only); it skips with the reason
// when mounting is impossible, unless VEIL_REQUIRE_INTEGRATION=1.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		msg := "a full-disk test needs a small file system: mount -t tmpfs failed (needs root or CAP_SYS_ADMIN): " + strings.TrimSpace(string(out))
		if os.Getenv("VEIL_REQUIRE_INTEGRATION") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	return dir
}

// A full disk is 507 no_space with a message that names no server path (before: 500
// "internal error"), and the client's following puts fail at once without sending.
func TestFullDisk(t *testing.T) {
	dir := smallFS(t, "3m")
	s := newServiceIn(t, dir, "", Config{})
	_, cred := addUser(t, s, "alice")
	url := serve(t, s)
	rb := remoteFor(t, url, cred)
	var full error
	for i := range 40 {
		data := randBytes(uint64(100+i), 256<<10)
		if err := rb.Put(t.Context(), "", "f"+string(rune('a'+i)), bytes.NewReader(data), int64(len(data))); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, storewire.ErrNoSpace) {
		t.Fatalf("filling a 3 MiB disk: %v, want no_space", full)
	}
	if strings.Contains(full.Error(), dir) || strings.Contains(full.Error(), "internal") {
		t.Fatalf("error discloses or hides: %v", full)
	}
	t.Logf("full disk: %v", full)
	again := rb.Put(t.Context(), "", "more", bytes.NewReader(make([]byte, 100<<10)), 100<<10)
	if !errors.Is(again, storewire.ErrNoSpace) || !strings.Contains(again.Error(), "not sent") {
		t.Fatalf("put after no_space: %v, want an immediate no_space", again)
	}
	// Over raw HTTP: the status and code.
	status, e := rawDo(t, url, cred, "PUT", "/v1/files/raw", bytes.NewReader(randBytes(7, 1<<20)))
	if status != http.StatusInsufficientStorage || e.Code != storewire.CodeNoSpace {
		t.Fatalf("raw put on a full disk: %d %+v", status, e)
	}
	// Reading still works.
	if _, err := s.Stats(); err != nil {
		t.Fatal(err)
	}
}

// A dead S3 blob store is noticed by the breaker's probe within a few seconds: puts of
// content that needs the blob store answer 503 unavailable with Retry-After (before: each
// took ~8.4 s to fail as "internal error"); content kept inline still works; reads of
// blob content are 503, not integrity errors.
func TestDeadBlobBackend(t *testing.T) {
	srv := testutil.StartS3(t)
	bucket := srv.NewBucket(t, "blobs", "")
	s := newTestService(t, Config{Blobs: bucket}) // default probe: every 2 s, 2 s timeout
	_, cred := addUser(t, s, "alice")
	url := serve(t, s)
	rb := remoteFor(t, url, cred)
	big := randBytes(1, 200<<10)
	putBytes(t, rb, "", "big", big)
	srv.Proc.Kill()
	killed := time.Now()
	var err error
	for i := 0; i < 100; i++ {
		err = rb.Put(t.Context(), "", "after", bytes.NewReader(randBytes(2, 200<<10)), 200<<10)
		if err != nil {
			break
		}
	}
	if !errors.Is(err, storewire.ErrUnavailable) {
		t.Fatalf("put with the blob store down: %v, want unavailable", err)
	}
	t.Logf("first 503 after %v: %v", time.Since(killed), err)
	start := time.Now()
	status, e := rawDo(t, url, cred, "PUT", "/v1/files/raw", bytes.NewReader(randBytes(3, 200<<10)))
	if status != http.StatusServiceUnavailable || e.Code != storewire.CodeUnavailable {
		t.Fatalf("raw put: %d %+v", status, e)
	}
	t.Logf("a put while the breaker is open failed in %v", time.Since(start))
	if _, err := rb.Get(t.Context(), "", "big"); !errors.Is(err, storewire.ErrUnavailable) || errors.Is(err, storage.ErrIntegrity) {
		t.Fatalf("get of blob content: %v, want unavailable", err)
	}
	putBytes(t, remoteFor(t, url, cred), "", "small", []byte("inline content needs no blob store"))
	// The store comes back: the probe closes the breaker and blob content flows again.
	testutil.Start(t, testutil.RequireBinary(t, "versitygw"), "--access", srv.AccessKey, "--secret", srv.SecretKey,
		"--port", srv.Endpoint, "--quiet", "posix", srv.Root)
	testutil.WaitTCP(t, srv.Endpoint, 30*time.Second)
	back := time.Now()
	rb2 := remoteFor(t, url, cred)
	for i := 0; ; i++ {
		err := rb2.Put(t.Context(), "", "again", bytes.NewReader(randBytes(4, 200<<10)), 200<<10)
		if err == nil {
			break
		}
		if !errors.Is(err, storewire.ErrUnavailable) || i == 60 {
			t.Fatalf("put after the blob store came back: %v", err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("blob puts work again %v after the store came back", time.Since(back))
	if got, err := getBytes(t, rb2, "", "big"); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get after recovery: %v", err)
	}
}

// The 503 carries Retry-After.
func TestUnavailableRetryAfter(t *testing.T) {
	s := newTestService(t, Config{})
	req, _ := http.NewRequest("GET", "/v1/files/x", nil)
	w := &headerRecorder{h: http.Header{}}
	s.writeErr(w, req, storewire.ErrUnavailable)
	if w.code != 503 || w.h.Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q", w.code, w.h.Get("Retry-After"))
	}
}

type headerRecorder struct {
	h    http.Header
	code int
}

func (r *headerRecorder) Header() http.Header         { return r.h }
func (r *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *headerRecorder) WriteHeader(c int)           { r.code = c }
