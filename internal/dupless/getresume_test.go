package dupless

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// cutBE cancels its command (as Ctrl-C does) at the first chunk read once armed.
type cutBE struct {
	storage.Backend
	cancel atomic.Pointer[context.CancelFunc]
}

func (b *cutBE) Get(ctx context.Context, d, n string) (io.ReadCloser, error) {
	if strings.HasPrefix(d, chunkRoot) {
		if f := b.cancel.Swap(nil); f != nil {
			(*f)()
			return nil, context.Canceled
		}
	}
	return b.Backend.Get(ctx, d, n)
}

// 'veil get big gb', interrupted, then run again: found by a user walkthrough, the first
// run had created gb, so the second put the folder inside it (gb/big), next to what the
// first had written. The folder get creates is marked until a run completes, and a run
// that finds the mark for the same SRC finishes that folder instead.
func TestGetIntoNewFolderResumesAfterInterrupt(t *testing.T) {
	if err := unix.Setxattr(t.TempDir(), partialAttr, []byte("x"), 0); err != nil {
		t.Skipf("the temporary directory's file system has no user extended attributes: %v", err)
	}
	be := &cutBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	src := makeTree(t) // stored as "src"
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "gb")
	cctx, cancel := context.WithCancel(ctx)
	be.cancel.Store(&cancel)
	if _, err := c.GetInto(cctx, "src", dest); err == nil {
		t.Fatal("interrupted get: no error")
	}
	if fi, err := os.Stat(dest); err != nil || !fi.IsDir() {
		t.Fatalf("the interrupted get left no %s (the test no longer makes the state it is about): %v", dest, err)
	}
	buf := make([]byte, 64) // the mark, as docs/formats/get-partial.md specifies it
	if n, err := unix.Getxattr(dest, "user.veil.get-partial", buf); err != nil || string(buf[:n]) != "src" {
		t.Fatalf("mark of the unfinished get: %q %v, want \"src\"", buf[:max(n, 0)], err)
	}
	if sum, err := c.GetInto(ctx, "src", dest); err != nil || sum.Err() != nil {
		t.Fatalf("get again: %v %v", err, sum.Err())
	}
	if _, err := os.Stat(filepath.Join(dest, "src")); !os.IsNotExist(err) {
		t.Fatalf("the second get nested the folder in %s/src", dest)
	}
	sameTree(t, src, dest)
	if _, err := unix.Getxattr(dest, "user.veil.get-partial", buf); err == nil {
		t.Fatal("the mark is still there after the get completed")
	}
	// Finished: the folder is an ordinary existing folder again, and the next get of the
	// same folder goes inside it, as cp does.
	if _, err := c.GetInto(ctx, "src", dest); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dest, "src", "d1", "d2", "d3", "deep file with spaces")); err != nil {
		t.Fatalf("get src into the finished folder: %v", err)
	}
}
