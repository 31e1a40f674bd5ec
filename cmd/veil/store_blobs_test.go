package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/testutil"
)

// A store whose content lives in S3 records it: fsck and gc need no --blobs (before,
// fsck reported every blob missing and exited 3 on a healthy store), a --blobs naming
// another location is refused, and so is serving it as a local store.
func TestStoreBlobLocationCLI(t *testing.T) {
	srv := testutil.StartS3(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	ctx := context.Background()
	dir := t.TempDir()
	loc := "s3://" + srv.Endpoint + "/veil-blobs?tls=0&create=1"
	if out, err := storeRun(t, ctx, "store", "init", "--dir", dir, "--blobs", loc); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	// Content in the bucket, put through the library as serve would.
	cfg, err := storeConfig(ctx, dir, "")
	if err != nil || cfg.Blobs == nil {
		t.Fatalf("recorded location not used: %+v %v", cfg, err)
	}
	err = storeserver.WithConfig(dir, cfg, func(s *storeserver.Service) error {
		if _, err := s.AddUser("alice"); err != nil {
			return err
		}
		ns, err := s.Namespace("alice")
		if err != nil {
			return err
		}
		data := bytes.Repeat([]byte("blob"), 50_000) // over the inline size: a blob in S3
		return ns.Put(ctx, "", "f", bytes.NewReader(data), int64(len(data)))
	})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := storeRun(t, ctx, "store", "fsck", "--dir", dir); err != nil || !strings.Contains(out, "clean") {
		t.Fatalf("fsck without --blobs: %v\n%s", err, out)
	}
	if out, err := storeRun(t, ctx, "store", "gc", "--dir", dir); err != nil {
		t.Fatalf("gc without --blobs: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"store", "fsck", "--dir", dir, "--blobs", "s3://" + srv.Endpoint + "/other?tls=0"},
		{"store", "serve", "--dir", dir, "--listen", "127.0.0.1:0", "--blobs", "s3://" + srv.Endpoint + "/other?tls=0"},
	} {
		if _, err := storeRun(t, ctx, args...); !errors.Is(err, storeserver.ErrBlobLocation) {
			t.Fatalf("veil %s: %v, want a blob location mismatch", strings.Join(args[:2], " "), err)
		}
	}
	// A local store refuses to be served with a blob store.
	local := t.TempDir()
	if _, err := storeRun(t, ctx, "store", "init", "--dir", local); err != nil {
		t.Fatal(err)
	}
	if _, err := storeRun(t, ctx, "store", "serve", "--dir", local, "--listen", "127.0.0.1:0", "--blobs", loc); !errors.Is(err, storeserver.ErrBlobLocation) {
		t.Fatalf("local store served with --blobs: %v", err)
	}
}
