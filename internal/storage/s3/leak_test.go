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
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead { // BucketExists
			return
		}
		if r.URL.Query().Get("list-type") == "2" {
			i := n.Add(1)
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>%s</Prefix><KeyCount>1</KeyCount><MaxKeys>1</MaxKeys><IsTruncated>true</IsTruncated><NextContinuationToken>t%d</NextContinuationToken><Contents><Key>%sk%d</Key><Size>1</Size><ETag>"x"</ETag><LastModified>2024-01-01T00:00:00.000Z</LastModified></Contents></ListBucketResult>`,
				r.URL.Query().Get("prefix"), i, r.URL.Query().Get("prefix"), i)
			return
		}
		w.WriteHeader(404)
	}))
	defer srv.Close()
	b, err := New(context.Background(), Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "bucket", AccessKey: "a", SecretKey: "b"})
	if err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		if ok, err := b.isDir(context.Background(), fmt.Sprint("d", i)); err != nil || !ok {
			t.Fatal(ok, err)
		}
		time.Sleep(2 * time.Millisecond) // the lister fetches page 2 meanwhile
	}
	time.Sleep(500 * time.Millisecond)
	after := runtime.NumGoroutine()
	buf := make([]byte, 1<<20)
	s := string(buf[:runtime.Stack(buf, true)])
	leaked := strings.Count(s, "listObjectsV2.func")
	t.Logf("goroutines before %d after %d; minio listers still alive: %d", before, after, leaked)
	if leaked > 0 {
		t.Errorf("%d minio lister goroutines leaked", leaked)
	}
}
