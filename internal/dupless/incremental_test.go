package dupless

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// A second put of an unchanged tree reads no file and sends nothing; a file whose mtime
// changed is read again (its content, unchanged, is not re-sent); a file rewritten with the
// same size and a new mtime is stored anew; Force reads everything.
func TestUnchangedFilesAreNotRead(t *testing.T) {
	be, master := newBackend(t), NewMasterKey()
	c, err := New(be, master, Options{Keys: mle.LocalKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := makeTree(t)
	first, err := c.Put(ctx, []string{src}, "")
	if err != nil || first.Err() != nil {
		t.Fatal(err, first.Err())
	}
	if first.Unchanged != 0 {
		t.Fatalf("first put: %d unchanged", first.Unchanged)
	}
	again, err := c.Put(ctx, []string{src}, "")
	if err != nil || again.Err() != nil {
		t.Fatal(err, again.Err())
	}
	if again.Unchanged != first.Files || again.Files != first.Files || again.BytesUploaded != 0 || again.ChunksUploaded != 0 {
		t.Fatalf("second put of an unchanged tree: %d of %d files unchanged, %d bytes sent, %d chunks", again.Unchanged, again.Files, again.BytesUploaded, again.ChunksUploaded)
	}
	if again.Bytes != first.Bytes || again.Chunks != first.Chunks {
		t.Fatalf("second put reports %d bytes, %d chunks; first %d, %d", again.Bytes, again.Chunks, first.Bytes, first.Chunks)
	}

	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(src, "big.bin"), later, later) // touched: read again, nothing re-sent
	edited := bytes.Repeat([]byte("COMPRESSIBLE LINE OF TEXT\n"), 5000)
	write(t, filepath.Join(src, "text.md"), edited) // same size, new content and mtime
	third, err := c.Put(ctx, []string{src}, "")
	if err != nil || third.Err() != nil {
		t.Fatal(err, third.Err())
	}
	if third.Unchanged != first.Files-2 || third.ChunksUploaded != 1 {
		t.Fatalf("after touching one file and editing another: %d unchanged, %d chunks sent", third.Unchanged, third.ChunksUploaded)
	}
	dst := filepath.Join(t.TempDir(), "r")
	if _, err := c.Get(ctx, "src", dst); err != nil {
		t.Fatal(err)
	}
	sameTree(t, src, dst)

	c2, err := New(be, master, Options{Keys: mle.LocalKeys{}, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	forced, err := c2.Put(ctx, []string{src}, "")
	if err != nil || forced.Err() != nil {
		t.Fatal(err, forced.Err())
	}
	// --force sends every chunk again: it is the repair for a chunk damaged on the service
	// (TestPutForceRepairsDamagedChunk).
	if forced.Unchanged != 0 || forced.ChunksUploaded == 0 || forced.ChunksUploaded != forced.Chunks-forced.ChunksKept {
		t.Fatalf("forced put: %d unchanged, %d of %d chunks sent, %d kept", forced.Unchanged, forced.ChunksUploaded, forced.Chunks, forced.ChunksKept)
	}
}

// Exclude patterns match names and paths below the PATH argument; an excluded directory
// is skipped whole.
func TestExclude(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	for _, p := range []string{"main.c", "main.o", "node_modules/lib/x.js", "build/out.bin", "docs/build/keep.txt", "a/b/deep.o", "notes.txt"} {
		write(t, filepath.Join(src, p), []byte(p))
	}
	if _, err := New(newBackend(t), NewMasterKey(), Options{Exclude: []string{"[z"}}); err == nil {
		t.Fatal("a malformed pattern was accepted")
	}
	c, err := New(newBackend(t), NewMasterKey(), Options{Exclude: []string{"*.o", "node_modules", "build"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sum, err := c.Put(ctx, []string{src}, "")
	if err != nil || sum.Err() != nil {
		t.Fatal(err, sum.Err())
	}
	var got []string
	dst := filepath.Join(t.TempDir(), "r")
	if _, err := c.Get(ctx, "src", dst); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			rel, _ := filepath.Rel(dst, p)
			got = append(got, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(got)
	want := []string{"main.c", "notes.txt"} // docs/build is a directory named build: excluded too
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("stored %v, want %v", got, want)
	}
	if sum.Excluded != 5 { // main.o, node_modules, build, docs/build, a/b/deep.o
		t.Fatalf("excluded %d, want 5", sum.Excluded)
	}
}
