package testutil

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage/s3"
)

// S3Server is a real S3 server (versitygw, posix backend) on loopback for one test.
type S3Server struct {
	Endpoint  string // host:port, plain HTTP
	AccessKey string
	SecretKey string
	Root      string // the directory versitygw serves (buckets are its subdirectories)
	Proc      *Process
	buckets   atomic.Int64
}

// NewBucket creates a fresh bucket named <name>-<n> and returns a backend on it, with
// objects under prefix ("" for the bucket's root).
func (s *S3Server) NewBucket(t testing.TB, name, prefix string) *s3.Backend {
	t.Helper()
	b, err := s3.New(context.Background(), s3.Config{Endpoint: s.Endpoint, Bucket: fmt.Sprintf("%s-%d", name, s.buckets.Add(1)),
		Prefix: prefix, AccessKey: s.AccessKey, SecretKey: s.SecretKey, CreateBucket: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// StartS3 starts versitygw on a free loopback port serving a fresh temporary directory and
// stops it when the test ends. It unsets AWS_CA_BUNDLE for the test: the server speaks plain
// HTTP and S3 clients here must not insist on a CA file.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	bin := RequireBinary(t, "versitygw")
	if _, ok := os.LookupEnv("AWS_CA_BUNDLE"); ok {
		if tt, ok := t.(*testing.T); ok {
			tt.Setenv("AWS_CA_BUNDLE", "")
		}
		os.Unsetenv("AWS_CA_BUNDLE")
	}
	s := &S3Server{AccessKey: "veiltestaccess", SecretKey: "veiltestsecretkey0123456789", Root: t.TempDir()}
	port := FreePort(t)
	s.Endpoint = Addr(port)
	s.Proc = Start(t, bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.Endpoint,
		"--quiet", "posix", s.Root)
	WaitTCP(t, s.Endpoint, 30*time.Second)
	return s
}
