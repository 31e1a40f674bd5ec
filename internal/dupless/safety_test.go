package dupless

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// A second master key on the same namespace (a second 'veil init') cannot change it: its
// put, rm, mv and prune are refused, and the first key's data stays readable.
func TestSecondKeyCannotTouchNamespace(t *testing.T) {
	be := newBackend(t)
	owner, intruder := newClient(t, be, mle.LocalKeys{}), newClient(t, be, mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f"), randBytes(4000, 1))
	if _, err := owner.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := intruder.Put(ctx, []string{dir}, "x"); !errors.Is(err, ErrForeignKey) {
		t.Fatalf("put: %v", err)
	}
	if _, err := intruder.Prune(ctx, 0, false); !errors.Is(err, ErrForeignKey) {
		t.Fatalf("prune: %v", err)
	}
	if err := intruder.Move(ctx, "a", "b"); !errors.Is(err, ErrForeignKey) {
		t.Fatalf("mv: %v", err)
	}
	if _, err := intruder.Remove(ctx, "a", true); !errors.Is(err, ErrForeignKey) {
		t.Fatalf("rm: %v", err)
	}
	if s, err := owner.Get(ctx, "", t.TempDir()); err != nil || s.Err() != nil || s.Files != 1 {
		t.Fatalf("owner's data after the intruder: %v %v", err, s.Err())
	}
}

// Prune takes an exclusive lock: it refuses to run while a put (shared lock) holds one,
// and a put refuses to start while prune runs.
func TestPruneExcludesWriters(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	unlock, err := c.lock(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prune(ctx, 0, false); !errors.Is(err, ErrLocked) {
		t.Fatalf("prune during a put: %v", err)
	}
	unlock()
	unlockX, err := c.lock(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(ctx, []string{t.TempDir()}, ""); !errors.Is(err, ErrLocked) {
		t.Fatalf("put during a prune: %v", err)
	}
	unlockX()
	if _, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatalf("prune after the locks are gone: %v", err)
	}
}

// A stored symlink named like a directory never makes get write outside its destination.
func TestGetNeverWritesThroughSymlinks(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	outside := t.TempDir()
	src := filepath.Join(t.TempDir(), "d")
	os.MkdirAll(src, 0o755)
	os.Symlink(outside, filepath.Join(src, "x"))
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "d")
	if s, err := c.Get(ctx, "d", dst); err != nil || s.Err() != nil {
		t.Fatal(err, s.Err())
	}
	// Locally x is now a directory with a file; storing it where a link is stored is refused.
	os.Remove(filepath.Join(src, "x"))
	write(t, filepath.Join(src, "x", "pwned"), []byte("x"))
	s, _ := c.Put(ctx, []string{src}, "")
	if s.Err() == nil {
		t.Fatal("a directory was stored over a stored symlink without complaint")
	}
	// Even a destination that already has a symlink where a directory is expected is safe.
	os.Remove(filepath.Join(dst, "x"))
	os.Symlink(outside, filepath.Join(dst, "x"))
	c2 := newClient(t, newBackend(t), mle.LocalKeys{})
	if _, err := c2.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	g, _ := c2.Get(ctx, "d", dst)
	if g.Err() == nil || !strings.Contains(g.Err().Error(), "symlink") {
		t.Fatalf("get through a symlink: %v", g.Err())
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("get wrote outside its destination")
	}
}

// A cancelled get or put returns promptly with the context's error.
func TestCancelReturns(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	dir := t.TempDir()
	write(t, filepath.Join(dir, "big"), randBytes(40<<20, 3))
	if _, err := c.Put(ctx, []string{dir}, ""); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	c.opts.Events.Bytes = func(int64) { cancel() } // cancel as soon as data flows
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(cctx, "", t.TempDir())
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled get: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelled get did not return")
	}
	c.opts.Events.Bytes = nil
	cctx, cancel = context.WithCancel(ctx)
	cancel()
	if _, err := c.Put(cctx, []string{dir}, "again"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
}

// Paths that climb are refused, and two sources with one destination are reported.
func TestPathRules(t *testing.T) {
	c := newClient(t, newBackend(t), mle.LocalKeys{})
	if _, err := c.Get(ctx, "..", t.TempDir()); err == nil {
		t.Fatal("get .. accepted")
	}
	if _, err := c.List(ctx, "a/../..", false); err == nil {
		t.Fatal("ls a/../.. accepted")
	}
	a, b := filepath.Join(t.TempDir(), "x"), filepath.Join(t.TempDir(), "x")
	write(t, a, []byte("a"))
	write(t, b, []byte("b"))
	s, err := c.Put(ctx, []string{a, b}, "")
	if err != nil || s.Err() == nil || !strings.Contains(s.Err().Error(), "same destination") {
		t.Fatalf("two sources, one destination: %v %v", err, s.Err())
	}
}
