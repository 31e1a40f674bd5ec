package storeserver

import (
	"fmt"
	"testing"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/storagetest"
	"github.com/veil-project/veil/internal/testutil"
)

// TestS3Blobs runs the store with its content in a real S3 bucket (versitygw), as
// 'veil store serve --blobs s3://...' does: the storage contract holds, content is
// deduplicated, and gc removes unreferenced objects from the bucket.
func TestS3Blobs(t *testing.T) {
	srv := testutil.StartS3(t)
	open := func(t *testing.T) (*Service, storage.Backend) {
		bucket := srv.NewBucket(t, "blobs", "")
		return newTestService(t, Config{Blobs: bucket}), bucket
	}
	t.Run("Conformance", func(t *testing.T) {
		storagetest.Run(t, func(t *testing.T) storage.Backend {
			s, _ := open(t)
			ns, _ := addUser(t, s, "alice")
			return ns
		})
	})
	t.Run("DedupAndGC", func(t *testing.T) {
		forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
			bucket := srv.NewBucket(t, "blobs", "")
			s := newService(t, Config{Blobs: bucket})
			a, _ := addUser(t, s, "alice")
			b, _ := addUser(t, s, "bob")
			data := randBytes(5, 2<<20)
			putBytes(t, a, "", "x", data)
			putBytes(t, b, "", "y", data)
			st := mustStats(t, s)
			if st.PhysicalBytes != int64(len(data)) || st.LogicalBytes != 2*int64(len(data)) {
				t.Fatalf("stats %+v", st)
			}
			count := func() int {
				n := 0
				for i := range 256 {
					infos, _ := bucket.List(t.Context(), fmt.Sprintf("blobs/%02x", i))
					n += len(infos)
				}
				return n
			}
			if c := count(); c != 1 {
				t.Fatalf("%d objects in the bucket, want 1", c)
			}
			a.Delete(t.Context(), "", "x")
			b.Delete(t.Context(), "", "y")
			if rep, err := s.GC(t.Context()); err != nil || rep.Blobs != 1 {
				t.Fatalf("gc: %+v %v", rep, err)
			}
			if c := count(); c != 0 {
				t.Fatalf("%d objects left after gc", c)
			}
			fsckClean(t, s)
		})
	})
}
