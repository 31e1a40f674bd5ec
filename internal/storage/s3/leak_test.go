package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Stopping a listing early (isDir reads one entry) must not leave minio's lister goroutine
// blocked. A fake S3 pages one key per page, endlessly truncated, so the lister always
// has a next page to send. (The real S3 server is tested by the conformance suite.)
func TestListingsLeaveNoGoroutine(t *testing.T) {
	var pages atomic.Int64 // pages served
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead { // BucketExists
			return
		}
		if r.URL.Query().Get("list-type") == "2" {
			prefix, i := r.URL.Query().Get("prefix"), pages.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>%s</Prefix><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken><Contents><Key>%sk%d</Key><Size>1</Size><ETag>"x"</ETag><LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents></ListBucketResult>`,
				prefix, i, prefix, i)
			return
		}
		w.WriteHeader(404)
	}))
	defer srv.Close()
	b, err := New(context.Background(), Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "bucket", AccessKey: "a", SecretKey: "b"})
	if err != nil {
		t.Fatal(err)
	}
	listers := func() int {
		buf := make([]byte, 1<<20)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "listObjectsV2.func")
	}
	for i := 0; i < 50; i++ {
		before := pages.Load()
		if ok, err := b.isDir(context.Background(), fmt.Sprint("d", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		// Give the lister its chance to leak: it either fetched page 2 (and, if the listing
		// was not stopped, blocks sending it) or is gone. Not a failure if neither comes.
		waitUntil(5*time.Second, func() bool { return pages.Load() >= before+2 || listers() == 0 })
	}
	if !waitUntil(10*time.Second, func() bool { return listers() == 0 }) {
		t.Errorf("%d minio lister goroutines still alive 10 s after their listings stopped", listers())
	}
}

// waitUntil polls cond until it holds (true) or the deadline passes (false).
func waitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}
