package testutil

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/veil-project/veil/internal/storage/s3"
)

// Open returns a backend on bucket (made if missing), objects under prefix, reached at
// endpoint: s.Endpoint, or a Proxy in front of it. Two Opens of one bucket are two
// devices' backends, each with its own caches.
func (s *S3Server) Open(t testing.TB, endpoint, bucket, prefix string) *s3.Backend {
	t.Helper()
	b, err := s3.New(context.Background(), s3.Config{Endpoint: endpoint, Bucket: bucket, Prefix: prefix,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey, CreateBucket: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Proxy starts an HTTP proxy in front of the server, stopped when the test ends, and
// returns its host:port. Every request goes to handle, with next the server: handle may
// hold, change or answer it itself.
func (s *S3Server) Proxy(t testing.TB, handle func(w http.ResponseWriter, r *http.Request, next http.Handler)) string {
	t.Helper()
	next := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: s.Endpoint})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handle(w, r, next) }))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// WithoutConditions makes r, a request to a Proxy, one from a client that never sent
// If-None-Match or If-Match: it drops them and signs r again with the server's keys (its
// body, if sent in signed chunks, decoded and signed whole), so the server takes r as
// unconditional, as an S3 server older than conditional writes (or a gateway that drops
// headers it does not know) does.
func (s *S3Server) WithoutConditions(t testing.TB, r *http.Request) {
	if r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Match") == "" {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("proxy: read the body: %v", err)
	}
	if r.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" {
		if body, err = decodeChunks(body); err != nil {
			t.Errorf("proxy: %v", err)
		}
		r.Header.Del("X-Amz-Decoded-Content-Length")
		r.Header.Del("Content-Encoding") // minio-go sends aws-chunked alone
	}
	sum := sha256.Sum256(body)
	r.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	for _, h := range []string{"If-None-Match", "If-Match", "Authorization", "Content-Length"} {
		r.Header.Del(h)
	}
	r.Header = signer.SignV4(*r, s.AccessKey, s.SecretKey, "", "us-east-1").Header
}

// decodeChunks returns the payload of an aws-chunked body: chunks of
// "<hex size>;chunk-signature=<sig>\r\n<bytes>\r\n", the last of size 0.
func decodeChunks(b []byte) ([]byte, error) {
	var out []byte
	for {
		head, rest, ok := bytes.Cut(b, []byte("\r\n"))
		size, _, _ := strings.Cut(string(head), ";")
		n, err := strconv.ParseUint(size, 16, 31)
		if !ok || err != nil || uint64(len(rest)) < n+2 {
			return nil, fmt.Errorf("aws-chunked body: bad chunk header %q", head)
		}
		if n == 0 {
			return out, nil
		}
		out, b = append(out, rest[:n]...), rest[n+2:]
	}
}
