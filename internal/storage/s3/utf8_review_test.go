package s3_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// S3 keys are UTF-8: a name or directory that is not is storage.ErrInvalidName (as the
// storage service answers it, docs/formats/store-api.md), not minio's unclassified error,
// which the DupLESS client takes for a transient failure and retries.
func TestInvalidUTF8NameIsInvalidName(t *testing.T) {
	srv := testutil.StartS3(t)
	b := srv.NewBucket(t, "utf", "veil")
	err := b.Put(context.Background(), "", "bad\xff", strings.NewReader("x"), 1)
	if !errors.Is(err, storage.ErrInvalidName) {
		t.Fatalf("put of a name that is not UTF-8: %q, want ErrInvalidName", err)
	}
	if _, err := b.List(context.Background(), "d\xff"); !errors.Is(err, storage.ErrInvalidName) {
		t.Fatalf("list of a directory that is not UTF-8: %q, want ErrInvalidName", err)
	}
}
