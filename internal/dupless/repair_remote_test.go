package dupless

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/remote"
	"github.com/veil-project/veil/internal/storeserver"
	"github.com/veil-project/veil/internal/testutil"
)

// A chunk damaged on the storage service is repaired by putting its file again with
// --force, whether the service keeps content on its disk or in S3 (versitygw). Found by a
// user walkthrough: put --force reused the stored chunks, and a service with content in
// S3 kept a damaged blob of the right size even when the content was sent again.
func TestPutForceRepairsDamagedChunk(t *testing.T) {
	for _, where := range []string{"disk", "s3"} {
		t.Run(where, func(t *testing.T) {
			var blobs storage.Backend
			var gets *countGets
			loc := storeserver.LocalBlobs
			if where == "s3" {
				gets = &countGets{Backend: testutil.StartS3(t).NewBucket(t, "blobs", "")}
				blobs, loc = gets, "s3://repair-test"
			}
			url, cred, dir := serveStoreWith(t, loc, blobs)
			be, err := remote.New(url, cred)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			master := NewMasterKey()
			client := func(force bool) *Client {
				c, err := New(be, master, Options{Keys: mle.LocalKeys{}, Force: force})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return c
			}
			c := client(false)
			src := filepath.Join(t.TempDir(), "f")
			data := randBytes(300<<10, 11) // one chunk, over the service's inline size: a blob
			write(t, src, data)
			mustPut(t, c, src, "")
			damageBlob(t, dir, blobs)
			if res, err := c.Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 1 {
				t.Fatalf("check of the damaged chunk: %+v %v", res, err)
			}
			if gets != nil { // an ordinary duplicate costs the bucket a stat, not a read of the blob
				copyOf := filepath.Join(t.TempDir(), "g")
				write(t, copyOf, data)
				before := gets.n.Load()
				mustPut(t, c, copyOf, "")
				if n := gets.n.Load() - before; n != 0 {
					t.Fatalf("a put of content the service holds read %d blobs from the bucket", n)
				}
			}
			mustPut(t, client(true), src, "")
			if res, err := c.Check(ctx, CheckOptions{ReadData: true}); err != nil || len(res.Problems) != 0 {
				t.Fatalf("check after put --force: %+v %v", res, err)
			}
			out := filepath.Join(t.TempDir(), "out")
			if _, err := client(false).Get(ctx, "f", out); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
				t.Fatalf("get after the repair: %d bytes, not the file", len(got))
			}
		})
	}
}

// countGets counts the reads of a blob bucket (the real one beneath).
type countGets struct {
	storage.Backend
	n atomic.Int64
}

func (g *countGets) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	g.n.Add(1)
	return g.Backend.Get(ctx, dir, name)
}

// damageBlob overwrites the one blob larger than the service keeps inline with as many
// other bytes: in the S3 bucket blobs, or under the data directory's blobs/.
func damageBlob(t *testing.T, dir string, blobs storage.Backend) {
	t.Helper()
	var found []string
	if blobs == nil {
		filepath.Walk(filepath.Join(dir, "blobs"), func(p string, fi os.FileInfo, _ error) error {
			if fi != nil && fi.Mode().IsRegular() && fi.Size() > storeserver.InlineMax {
				found = append(found, p)
				os.WriteFile(p, randBytes(int(fi.Size()), 7), 0o644)
			}
			return nil
		})
	} else {
		for i := range 256 {
			infos, _ := blobs.List(ctx, fmt.Sprintf("blobs/%02x", i))
			for _, in := range infos {
				if in.Size > storeserver.InlineMax {
					found = append(found, in.Path())
					if err := blobs.Put(ctx, in.Dir, in.Name, bytes.NewReader(randBytes(int(in.Size), 7)), in.Size); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("blobs over the inline size: %v, want one", found)
	}
}
