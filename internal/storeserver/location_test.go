package storeserver

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/veil-project/veil/internal/testutil"
)

// The data directory records its blob location; opening it with another one, or as a
// local store, is refused at start; a directory from before the record adopts local.
func TestBlobLocationRecorded(t *testing.T) {
	srv := testutil.StartS3(t)
	bucket := srv.NewBucket(t, "blobs", "")
	dir := t.TempDir()
	const loc = "s3://127.0.0.1:1/blobs-1?tls=0"
	if err := InitBlobs(dir, loc, bucket); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir, Config{Blobs: bucket, BlobLocation: loc})
	if err != nil {
		t.Fatal(err)
	}
	ns, _ := addUser(t, s, "alice")
	putBytes(t, ns, "", "f", randBytes(1, 100<<10))
	fsckClean(t, s)
	if _, err := s.GC(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Content in S3: init, a put, fsck and gc make no blobs/ tree (session 16: init made
	// 256 empty directories).
	if _, err := os.Stat(filepath.Join(dir, blobName)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an S3-backed store's data directory has %s: %v", blobName, err)
	}
	for _, cfg := range []Config{{}, {Blobs: bucket, BlobLocation: "s3://elsewhere/b"}, {Blobs: bucket}} {
		if s, err := Open(dir, cfg); !errors.Is(err, ErrBlobLocation) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("open with %q: %v, want a mismatch", cfg.BlobLocation, err)
		}
	}
	if got, err := ResolveBlobs(dir, ""); err != nil || got != loc {
		t.Fatalf("resolve: %q %v", got, err)
	}
	if _, err := ResolveBlobs(dir, "s3://elsewhere/b"); !errors.Is(err, ErrBlobLocation) {
		t.Fatalf("resolve another: %v", err)
	}
	if err := InitBlobs(t.TempDir(), "s3://key:secret@host/b", bucket); err == nil {
		t.Fatal("a location with credentials was recorded")
	}
	// A local directory from before the record: opened as local, then recorded.
	old := t.TempDir()
	if err := Init(old); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(old, locationFile))
	if err := With(old, func(*Service) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, _ := BlobLocation(old); got != LocalBlobs {
		t.Fatalf("legacy directory recorded %q", got)
	}
	if fi, err := os.Stat(filepath.Join(old, blobName, "ff")); err != nil || !fi.IsDir() {
		t.Fatalf("a local store's blobs/ff: %v", err)
	}
}
