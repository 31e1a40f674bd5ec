package s3_test

import (
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/storagetest"
	"github.com/veil-project/veil/internal/testutil"
)

// TestConformance runs the contract against a real S3 server (versitygw) on loopback, one
// fresh bucket per case.
func TestConformance(t *testing.T) {
	srv := testutil.StartS3(t)
	storagetest.Run(t, func(t *testing.T) storage.Backend { return srv.NewBucket(t, "conf", "veil") })
}
