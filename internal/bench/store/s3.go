package storebench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3Target is plain S3 PUT/GET (minio-go) against a versitygw started for the run.
type s3Target struct {
	c      *minio.Client
	bucket string
	cmd    *exec.Cmd
}

func findVersitygw() string {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gp)), "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func startS3(ctx context.Context, dir string) (*s3Target, string) {
	bin := findVersitygw()
	if bin == "" {
		return nil, "versitygw not installed (scripts/install-deps): S3 comparison skipped"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err.Error()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err.Error()
	}
	addr := ln.Addr().String()
	ln.Close()
	const ak, sk = "benchaccess", "benchsecretkey0123456789"
	cmd := exec.CommandContext(ctx, bin, "--access", ak, "--secret", sk, "--port", addr, "--quiet", "posix", dir)
	if err := cmd.Start(); err != nil {
		return nil, err.Error()
	}
	t := &s3Target{bucket: "bench", cmd: cmd}
	if waitTCP(addr) != nil {
		t.stop()
		return nil, "versitygw did not start"
	}
	os.Unsetenv("AWS_CA_BUNDLE")
	t.c, err = minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(ak, sk, ""), Region: "us-east-1",
		BucketLookup: minio.BucketLookupPath})
	if err == nil {
		err = t.c.MakeBucket(ctx, t.bucket, minio.MakeBucketOptions{})
	}
	if err != nil {
		t.stop()
		return nil, fmt.Sprintf("s3: %v", err)
	}
	return t, ""
}

func (t *s3Target) stop() {
	t.cmd.Process.Kill()
	t.cmd.Wait()
}

func (t *s3Target) name() string { return "s3" }
func (t *s3Target) put(ctx context.Context, key string, data []byte) error {
	_, err := t.c.PutObject(ctx, t.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{PartSize: 16 << 20})
	return err
}
func (t *s3Target) get(ctx context.Context, key string) (int64, error) {
	obj, err := t.c.GetObject(ctx, t.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return 0, err
	}
	defer obj.Close()
	return io.Copy(io.Discard, obj)
}
func (t *s3Target) reset(ctx context.Context) error {
	for oi := range t.c.ListObjects(ctx, t.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			return oi.Err
		}
		if err := t.c.RemoveObject(ctx, t.bucket, oi.Key, minio.RemoveObjectOptions{}); err != nil {
			return err
		}
	}
	return nil
}
