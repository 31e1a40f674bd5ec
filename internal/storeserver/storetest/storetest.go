package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/server"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/storewire"
)

// Options shape the service Open and Serve start; the zero value is a service with its
// content on its own disk and the default configuration.
type Options struct {
	Config       storeserver.Config // Blobs and BlobLocation are set from the two below
	BlobLocation string             // "" is storeserver.LocalBlobs
	Blobs        storage.Backend    // the blob store for an s3:// BlobLocation
}

// Open makes a data directory with the user alice and opens the service on it (closed
// when the test ends): the service, alice's credential, and the data directory.
func Open(t testing.TB, o Options) (*storeserver.Service, storewire.Credential, string) {
	t.Helper()
	dir := t.TempDir()
	loc := o.BlobLocation
	if loc == "" {
		loc = storeserver.LocalBlobs
	}
	if err := storeserver.InitBlobs(dir, loc, o.Blobs); err != nil {
		t.Fatal(err)
	}
	cfg := o.Config
	cfg.Blobs, cfg.BlobLocation = o.Blobs, loc
	s, err := storeserver.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cred, err := s.AddUser("alice")
	if err != nil {
		t.Fatal(err)
	}
	return s, cred, dir
}

// Serve serves s over HTTPS on a loopback listener, wrapped by wrap unless it is nil (to
// watch connections), until the test ends; it returns the service's URL.
func Serve(t testing.TB, s *storeserver.Service, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	if wrap != nil {
		ln = wrap(ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, server.Listeners{HTTP: ln}) }()
	t.Cleanup(func() { cancel(); <-done })
	return url
}

// Start is Open then Serve: the URL, alice's credential and the data directory.
func Start(t testing.TB, o Options) (string, storewire.Credential, string) {
	t.Helper()
	s, cred, dir := Open(t, o)
	return Serve(t, s, nil), cred, dir
}

// OlderMoves serves h as a service from before conditional moves (session 14) answers: a
// move body its parser does not know (the four path fields only, strictly) is refused as
// 400 bad_request, as that parser did, and counted in refused (if not nil); other
// requests go to h.
func OlderMoves(t testing.TB, h http.Handler, refused *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/move") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			var m struct {
				SrcDir  string `json:"src_dir"`
				SrcName string `json:"src_name"`
				DstDir  string `json:"dst_dir"`
				DstName string `json:"dst_name"`
			}
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil {
				if refused != nil {
					refused.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(storewire.Error{Code: storewire.CodeBadRequest, Message: "move: body is not a JSON move request: " + err.Error()})
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}

// OlderBatches serves h as a service from before batch version 4 (match conditions)
// answers: a batch body of a higher version is refused as 400 bad_request ("version 4,
// want 1 to 3") and counted in refused (if not nil); lower versions go to h.
func OlderBatches(t testing.TB, h http.Handler, refused *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/batch") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			if len(body) > 0 && body[0] > storewire.BatchVersionAbsent {
				if refused != nil {
					refused.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"code":%q,"message":"malformed batch body: version %d, want 1 to 3"}`, storewire.CodeBadRequest, body[0])
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	})
}
