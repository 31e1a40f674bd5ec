package local_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storage/local"
	"github.com/veil-project/veil/internal/testutil"
)

// A commit lock that cannot be taken is named as such, never as the object's own state.
// Found by the session 17 review: with .veil-tmp removed while a store was open, Delete
// and MoveMatch of an object that is there said "not found" (ErrNotFound), which rm takes
// for a record already gone (deleteRecord notes it deleted and the next root drops it,
// though it is still stored); with .veil-tmp/lock a directory, every commit said "put
// KEY: is a directory" (ErrIsDir) of whatever object it wrote; a lock file this user may
// not write (made by root's veil in the user's store) was named as the object written.
func TestLockFailureNamesTheLockFile(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	b, err := local.New(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "a", "b", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(root, local.TempDirName)
	check := func(what string, err error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error", what)
		case errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrIsDir):
			t.Errorf("%s: %q reads as the object's own state", what, err)
		case !strings.Contains(err.Error(), local.TempDirName+"/lock") || strings.Contains(err.Error(), root) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: %q does not name the lock file once, below the root, in one line", what, err)
		}
	}
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	check("delete, .veil-tmp removed", b.Delete(ctx, "a", "b"))
	check("conditional move, .veil-tmp removed", b.MoveMatch(ctx, "a", "b", "", "moved", [32]byte{}))
	check("move, .veil-tmp removed", b.Move(ctx, "a", "b", "", "moved"))
	if _, err := os.Stat(filepath.Join(root, "a", "b")); err != nil {
		t.Fatalf("the object after the refused commits: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(tmp, "lock"), 0o700); err != nil {
		t.Fatal(err)
	}
	check("put, the lock file a directory", b.Put(ctx, "a", "c", bytes.NewReader([]byte("x")), 1))
	check("batch, the lock file a directory", b.PutBatch(ctx, []storage.Object{{Dir: "a", Name: "c", Data: []byte("x")}}))
	check("delete, the lock file a directory", b.Delete(ctx, "a", "b"))

	denied, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := denied.Put(ctx, "a", "b", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	testutil.DenyWrites(t, filepath.Join(denied.Root(), local.TempDirName, "lock"))
	err = denied.Delete(ctx, "a", "b")
	check("delete, the lock file denied", err)
	if !errors.Is(err, storage.ErrPermission) {
		t.Errorf("delete, the lock file denied: %q is not a permission error", err)
	}
}

// A commit waiting for the lock ends when its context does: another process holding it
// (stopped mid-commit, or on a stalled network filesystem) made Ctrl-C do nothing until it
// let go. Found by the session 17 review: a 'veil put' waiting on a held lock went on
// waiting after SIGINT. The wait abandoned takes and drops the lock once it is free, so
// later commits go on.
func TestLockWaitEndsWithContext(t *testing.T) {
	b, err := local.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Put(context.Background(), "a", "b", bytes.NewReader([]byte("x")), 1); err != nil {
		t.Fatal(err)
	}
	held, err := os.OpenFile(filepath.Join(b.Root(), local.TempDirName, "lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		op   func(context.Context) error
	}{
		{"delete", func(ctx context.Context) error { return b.Delete(ctx, "a", "b") }},
		{"put", func(ctx context.Context) error { return b.Put(ctx, "a", "c", bytes.NewReader([]byte("x")), 1) }},
		{"batch", func(ctx context.Context) error {
			return b.PutBatch(ctx, []storage.Object{{Dir: "a", Name: "c", Data: []byte("x"), Create: true}})
		}},
		{"conditional move", func(ctx context.Context) error { return b.MoveMatch(ctx, "a", "b", "", "m", [32]byte{}) }},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- c.op(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s waiting for a held lock, its context ended: %v", c.what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s waiting for a held lock: its context ended 5s ago, still waiting", c.what)
		}
		cancel()
	}
	if _, err := os.Stat(filepath.Join(b.Root(), "a", "c")); err == nil {
		t.Fatal("a put whose wait for the lock ended stored its object")
	}
	held.Close()
	done := make(chan error, 1)
	go func() { done <- b.Delete(context.Background(), "a", "b") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the lock is not free again once its holder let go: an abandoned wait kept it")
	}
}
