package storagetest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/veil-project/veil/internal/storage"
)

func testMoveFile(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "src", "f", []byte("payload"))
	if err := b.Move(ctx, "src", "f", "src", "g"); err != nil {
		t.Fatalf("rename: %v", err)
	}
	if err := b.Move(ctx, "src", "g", "dst/deep", "h h"); err != nil {
		t.Fatalf("move across dirs: %v", err)
	}
	if got := string(get(t, b, "dst/deep", "h h")); got != "payload" {
		t.Fatalf("moved file reads %q", got)
	}
	if got := names(t, b, "src"); got != "" {
		t.Fatalf("source dir still lists %q", got)
	}
	put(t, b, "", "other", []byte("o"))
	wantErr(t, "move onto a file", b.Move(ctx, "", "other", "dst/deep", "h h"), storage.ErrExists)
	wantErr(t, "move onto a dir", b.Move(ctx, "", "other", "", "dst"), storage.ErrExists)
	if got := string(get(t, b, "", "other")); got != "o" {
		t.Fatalf("failed move changed the source: %q", got)
	}
}

func testMoveDir(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	put(t, b, "a/d", "f1", []byte("1"))
	put(t, b, "a/d/sub", "f2", []byte("22"))
	if err := b.Create(ctx, "a/d/empty"); err != nil {
		t.Fatal(err)
	}
	if err := b.Move(ctx, "a", "d", "b/c", "moved"); err != nil {
		t.Fatalf("move dir: %v", err)
	}
	if got := names(t, b, "b/c/moved"); got != "empty/,f1,sub/" {
		t.Fatalf("moved dir lists %q", got)
	}
	if got := string(get(t, b, "b/c/moved/sub", "f2")); got != "22" {
		t.Fatalf("moved file reads %q", got)
	}
	if got := names(t, b, "a"); got != "" {
		t.Fatalf("old parent lists %q", got)
	}
	_, err := b.Stat(ctx, "a", "d")
	wantErr(t, "stat moved dir", err, storage.ErrNotFound)
	if err := b.Create(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "move dir onto dir", b.Move(ctx, "b/c", "moved", "", "x"), storage.ErrExists)
}

// testConcurrentWriters races writers on one name: the result is exactly one writer's
// bytes, whole.
func testConcurrentWriters(t *testing.T, b storage.Backend) {
	const writers, size = 8, 256 << 10
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := fill(byte('A'+i), size)
			if err := b.Put(ctx, "race", "obj", strings.NewReader(string(data)), size); err != nil {
				errs <- fmt.Errorf("writer %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := get(t, b, "race", "obj")
	if len(got) != size {
		t.Fatalf("got %d bytes, want %d", len(got), size)
	}
	if c := got[0]; c < 'A' || c >= 'A'+writers || strings.Trim(string(got), string(c)) != "" {
		t.Fatalf("object mixes writers' bytes")
	}
}

// testFailingReader checks that a Put whose reader fails, or yields another length than
// declared, stores nothing and leaves an older object untouched.
func testFailingReader(t *testing.T, b storage.Backend) {
	ctx := context.Background()
	if err := b.Put(ctx, "fail", "new", &failingReader{n: 300 << 10}, -1); err == nil {
		t.Fatal("put with a failing reader succeeded")
	}
	_, err := b.Stat(ctx, "fail", "new")
	wantErr(t, "stat after failed put", err, storage.ErrNotFound)
	if err := b.Put(ctx, "fail", "new", &failingReader{n: 10}, 10); err == nil {
		t.Fatal("put whose reader fails right after the declared size succeeded")
	}
	// A stream that breaks as an aborted HTTP body or a cut compressed stream does
	// (io.ErrUnexpectedEOF), which some consumers take for the end of a short last part.
	for _, size := range []int64{-1, 300 << 10} {
		broken := io.MultiReader(bytes.NewReader(fill('b', 300<<10)), iotest.ErrReader(io.ErrUnexpectedEOF))
		if err := b.Put(ctx, "fail", "broken", broken, size); err == nil {
			t.Fatalf("put (size %d) of a stream that broke (unexpected EOF) succeeded", size)
		}
		_, err := b.Stat(ctx, "fail", "broken")
		wantErr(t, "stat after a broken put", err, storage.ErrNotFound)
	}

	put(t, b, "", "old", []byte("old bytes"))
	if err := b.Put(ctx, "", "old", &failingReader{n: 1000}, 5000); err == nil {
		t.Fatal("put with a failing reader succeeded")
	}
	err = b.Put(ctx, "", "old", strings.NewReader("short"), 10)
	wantErr(t, "put of fewer bytes than declared", err, storage.ErrSizeMismatch)
	err = b.Put(ctx, "", "old", strings.NewReader("longer than declared"), 4)
	wantErr(t, "put of more bytes than declared", err, storage.ErrSizeMismatch)
	err = b.Put(ctx, "", "fresh", strings.NewReader("longer than declared"), 4)
	wantErr(t, "put of more bytes than declared", err, storage.ErrSizeMismatch)
	if got := string(get(t, b, "", "old")); got != "old bytes" {
		t.Fatalf("failed puts changed the object: %q", got)
	}
	if got := names(t, b, ""); got != "old" {
		t.Fatalf("root lists %q after failed puts", got)
	}
}
