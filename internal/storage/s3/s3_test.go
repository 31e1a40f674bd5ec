package s3_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/s3"
	"github.com/veil-project/veil/internal/storage/storagetest"
	"github.com/veil-project/veil/internal/testutil"
)

// TestConformance runs the contract against a real S3 server (versitygw) on loopback, one
// fresh bucket per case.
func TestConformance(t *testing.T) {
	srv := testutil.StartS3(t)
	var n atomic.Int64
	storagetest.Run(t, func(t *testing.T) storage.Backend {
		b, err := s3.New(t.Context(), s3.Config{Endpoint: srv.Endpoint, Bucket: fmt.Sprintf("conf-%d", n.Add(1)),
			Prefix: "veil", AccessKey: srv.AccessKey, SecretKey: srv.SecretKey, CreateBucket: true})
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
