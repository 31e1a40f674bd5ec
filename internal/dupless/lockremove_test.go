package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// hookBE runs a hook at a chosen moment of another command: before a Move, after a Put.
type hookBE struct {
	storage.Backend
	onMove   func()
	afterPut func(dir, name string)
}

func (b *hookBE) Move(ctx context.Context, d, n, td, tn string) error {
	if f := b.onMove; f != nil {
		f()
	}
	return b.Backend.Move(ctx, d, n, td, tn)
}

func (b *hookBE) Put(ctx context.Context, d, n string, r io.Reader, size int64) error {
	err := b.Backend.Put(ctx, d, n, r, size)
	if f := b.afterPut; f != nil && err == nil {
		f(d, n)
	}
	return err
}

// mv runs alone (lockRemoving): a put of the file it moves, made while it runs, is
// refused (ErrLocked) rather than acknowledged and lost. Found by review: under the shared
// lock, mv moved the put's new record to the kept name of the old version (or deleted it),
// and the put's file was readable in no snapshot, not even the one the put published.
func TestMoveExcludesConcurrentPut(t *testing.T) {
	be := &hookBE{Backend: newBackend(t)}
	dev := devices(t, be)
	fa, fb := filepath.Join(t.TempDir(), "f"), filepath.Join(t.TempDir(), "f")
	write(t, fa, randBytes(40<<10, 91))
	write(t, fb, randBytes(40<<10, 92))
	later := time.Now().Add(time.Hour)
	os.Chtimes(fb, later, later)
	if _, err := dev().Put(ctx, []string{fa}, ""); err != nil {
		t.Fatal(err)
	}
	var once atomic.Bool
	var putErr error
	be.onMove = func() {
		if once.CompareAndSwap(false, true) {
			_, putErr = dev().Put(ctx, []string{fb}, "")
		}
	}
	if err := dev().Move(ctx, "f", "g"); err != nil {
		t.Fatal(err)
	}
	be.onMove = nil
	if !once.Load() {
		t.Fatal("mv moved nothing: the race was not run")
	}
	if !errors.Is(putErr, ErrLocked) {
		t.Fatalf("a put of f while mv f g runs: %v, want %v", putErr, ErrLocked)
	}
	sameFile(t, dev(), fa, "g")
}

// rm -r runs alone: made while a put into the folder has written records it has not yet
// published, it is refused (ErrLocked) and the put's files stay readable. Found by review:
// under the shared lock, rm -r deleted the records no root listed yet (the running
// put's), and the put then published a root listing records that no longer existed.
func TestRemoveTreeExcludesConcurrentPut(t *testing.T) {
	be := &hookBE{Backend: newBackend(t)}
	dev := devices(t, be)
	old := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(old, "old"), []byte("old"))
	if _, err := dev().Put(ctx, []string{old}, ""); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "sub")
	write(t, filepath.Join(src, "new1"), randBytes(40<<10, 101))
	write(t, filepath.Join(src, "new2"), randBytes(40<<10, 102))
	var once atomic.Bool
	var rmErr error
	be.afterPut = func(d, name string) {
		if strings.HasSuffix(name, keySuffix) && !strings.HasPrefix(d, veilDir) && once.CompareAndSwap(false, true) {
			_, rmErr = dev().Remove(ctx, "sub", true)
		}
	}
	s, err := dev().Put(ctx, []string{src}, "")
	be.afterPut = nil
	if err != nil || s.Err() != nil {
		t.Fatalf("put: %v %v", err, s.Err())
	}
	if !once.Load() {
		t.Fatal("the put wrote no record: the race was not run")
	}
	if !errors.Is(rmErr, ErrLocked) {
		t.Fatalf("rm -r sub while a put into sub runs: %v, want %v", rmErr, ErrLocked)
	}
	c := dev()
	for _, n := range []string{"new1", "new2"} {
		sameFile(t, c, filepath.Join(src, n), "sub/"+n)
	}
}

// Two puts of one file under the shared lock: each writes its record at the file's path,
// then publishes a root listing it. When the later writer publishes first, the other's
// publish must list what is stored, not its own record, which is gone. Found by review:
// the newest root listed the first writer's record over the second's, and the file was
// unreadable in the newest tree (resolveConflicts).
func TestPutsOfOneFileRaceToPublish(t *testing.T) {
	be := &hookBE{Backend: newBackend(t)}
	dev := seededDevices(t, be)
	fa, fb := filepath.Join(t.TempDir(), "f"), filepath.Join(t.TempDir(), "f")
	write(t, fa, randBytes(40<<10, 91))
	write(t, fb, randBytes(40<<10, 92))
	var once atomic.Bool
	var bErr error
	be.afterPut = func(d, name string) { // a has written its record; b writes and publishes
		if strings.HasSuffix(name, keySuffix) && !strings.HasPrefix(d, veilDir) && once.CompareAndSwap(false, true) {
			_, bErr = dev().Put(ctx, []string{fb}, "")
		}
	}
	if _, err := dev().Put(ctx, []string{fa}, ""); err != nil {
		t.Fatal(err)
	}
	be.afterPut = nil
	if !once.Load() || bErr != nil {
		t.Fatalf("the race was not run (b's put: %v)", bErr)
	}
	sameFile(t, dev(), fb, "f") // b's record is the one stored: the later write
}

// flakyLockBE drops the first lock write's connection, as a store node killed as the lock
// goes out does.
type flakyLockBE struct {
	storage.Backend
	failed atomic.Bool
}

func (b *flakyLockBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if dir == locksDir && b.failed.CompareAndSwap(false, true) {
		return fmt.Errorf("put %s: %w", name, syscall.ECONNRESET)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// The lock write is retried as uploads are: a store node that died as the lock went out
// failed the whole put (found by the multi-node test's SIGKILL, in CI).
func TestLockWriteRetried(t *testing.T) {
	fastRetries(t)
	be := &flakyLockBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "t", "a"), []byte("a"))
	write(t, filepath.Join(dir, "t", "b"), []byte("b"))
	if _, err := c.Put(ctx, []string{filepath.Join(dir, "t")}, ""); err != nil {
		t.Fatalf("put after one dropped lock write: %v", err)
	}
	if !be.failed.Load() {
		t.Fatal("no lock was written")
	}
}
