package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/s3"
	"github.com/veil-project/veil/internal/testutil"
)

// A body of unknown size whose stream breaks (io.ErrUnexpectedEOF, as an aborted HTTP body
// or a cut gzip stream reports it) is a failed Put: nothing stored, the error returned.
// minio-go reads parts with a readFull that takes io.ErrUnexpectedEOF for a short last
// part, so a bare io.ErrUnexpectedEOF must never reach it.
func TestPutUnknownSizeBrokenStreamStoresNothing(t *testing.T) {
	srv := testutil.StartS3(t)
	b := srv.NewBucket(t, "broken", "veil")
	ctx := context.Background()
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", 1000)), iotest.ErrReader(io.ErrUnexpectedEOF))
	err := b.Put(ctx, "d", "f", body, -1)
	if err == nil {
		info, serr := b.Stat(ctx, "d", "f")
		t.Fatalf("put of a broken stream succeeded; stored %+v (stat error %v)", info, serr)
	}
	if _, serr := b.Stat(ctx, "d", "f"); !errors.Is(serr, storage.ErrNotFound) {
		t.Fatalf("broken put left an object: %v", serr)
	}
}

// An over-long body whose declared size is a whole number of parts: the size error comes
// with the last part's final bytes, and minio-go's readFull drops an error that comes with
// a full buffer, so the declared prefix was stored and Put reported success.
func TestPutOverlongBodyWholePartsStoresNothing(t *testing.T) {
	srv := testutil.StartS3(t)
	const part = 5 << 20
	ctx := context.Background()
	b, err := s3.New(ctx, s3.Config{Endpoint: srv.Endpoint, Bucket: "overlong", Prefix: "veil",
		AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, CreateBucket: true, PartSize: part})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, 2*part+1)
	err = b.Put(ctx, "", "f", bytes.NewReader(data), 2*part)
	if !errors.Is(err, storage.ErrSizeMismatch) {
		info, serr := b.Stat(ctx, "", "f")
		t.Fatalf("put of %d bytes declared as %d: error %v, want ErrSizeMismatch; stored %+v (stat error %v)", len(data), 2*part, err, info, serr)
	}
	if _, serr := b.Stat(ctx, "", "f"); !errors.Is(serr, storage.ErrNotFound) {
		t.Fatalf("over-long put left an object: %v", serr)
	}
}
