package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// goneBE is a storage service that goes down at the downAt-th folder listing: from then on
// every read finds nothing listening (the remote backend's dial error). after counts the
// requests that would still have gone out.
type goneBE struct {
	storage.Backend
	downAt        int64
	listed, after atomic.Int64
}

func (b *goneBE) down(ctx context.Context) error {
	if b.downAt == 0 || b.listed.Load() < b.downAt {
		return nil
	}
	if ctx.Err() == nil {
		b.after.Add(1)
	}
	return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

func (b *goneBE) List(ctx context.Context, dir string) ([]storage.Info, error) {
	b.listed.Add(1)
	if err := b.down(ctx); err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	return b.Backend.List(ctx, dir)
}

func (b *goneBE) Get(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	if err := b.down(ctx); err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	return b.Backend.Get(ctx, dir, name)
}

func (b *goneBE) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if err := b.down(ctx); err != nil {
		return storage.Info{}, fmt.Errorf("stat %s: %w", name, err)
	}
	return b.Backend.Stat(ctx, dir, name)
}

// A get whose storage service goes down stops with one error that says so, instead of
// then reading each folder's record it had walked, every read retried (found by a user
// walkthrough: 94 s after the service was killed, and the last error a folder listing).
func TestGetStopsWhenServiceGoesDown(t *testing.T) {
	fastRetries(t)
	defer func(d time.Duration) { outageGrace = d }(outageGrace)
	outageGrace = 0 // down from the second failure on (a real outage: 5 s)
	be := &goneBE{Backend: newBackend(t)}
	c := newClient(t, be, mle.LocalKeys{})
	src := filepath.Join(t.TempDir(), "src")
	const folders = 80
	for i := range folders {
		write(t, filepath.Join(src, fmt.Sprintf("d%02d", i), "f"), randBytes(100, uint64(i)))
	}
	if _, err := c.Put(ctx, []string{src}, ""); err != nil {
		t.Fatal(err)
	}
	be.downAt = be.listed.Load() + folders*3/4 // most folders walked
	_, err := c.Get(ctx, "src", filepath.Join(t.TempDir(), "back"))
	var op *net.OpError
	if !errors.As(err, &op) || !strings.HasPrefix(err.Error(), "get stopped: the storage service does not answer") {
		t.Fatalf("get: %v, want it stopped by the outage", err)
	}
	if n := be.after.Load(); n > 10 {
		t.Fatalf("%d reads sent after the service was found down", n)
	}
}
