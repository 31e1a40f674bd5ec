package dupless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/storage"
)

// fullBE answers every chunk upload with a "cannot store" error, as a store with a full
// disk does (storewire.ErrNoSpace matches storage.ErrCannotStore).
type fullBE struct {
	storage.Backend
	puts atomic.Int64
}

func (b *fullBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if len(dir) >= len(chunkRoot) && dir[:len(chunkRoot)] == chunkRoot {
		b.puts.Add(1)
		return fmt.Errorf("put %s: %w", name, storage.ErrCannotStore)
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// A put against a service that can store nothing stops at once with one clear error,
// instead of trying (and failing) every file.
func TestPutStopsWhenServiceCannotStore(t *testing.T) {
	fastRetries(t)
	be := &fullBE{Backend: newBackend(t)}
	c, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	const files = 200
	for i := range files {
		write(t, filepath.Join(dir, fmt.Sprintf("f%03d", i)), randBytes(2000, uint64(i)))
	}
	sum, err := c.Put(ctx, []string{dir}, "")
	if !errors.Is(err, storage.ErrCannotStore) {
		t.Fatalf("put: %v, want ErrCannotStore", err)
	}
	if n := be.puts.Load(); n >= files/2 {
		t.Fatalf("%d chunk uploads tried after the service said it can store nothing", n)
	}
	if sum.Files != 0 {
		t.Fatalf("%d files reported stored", sum.Files)
	}
}

// downBE refuses every chunk upload's connection, as a storage service that went down
// mid-put does (the remote backend's dial error).
type downBE struct {
	storage.Backend
	puts atomic.Int64
}

func (b *downBE) Put(ctx context.Context, dir, name string, r io.Reader, size int64) error {
	if len(dir) >= len(chunkRoot) && dir[:len(chunkRoot)] == chunkRoot {
		b.puts.Add(1)
		return fmt.Errorf("put %s: %w", name, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	}
	return b.Backend.Put(ctx, dir, name, r, size)
}

// A put whose storage service went down stops once an upload's retries found nothing
// listening, with one error, instead of failing every remaining file in turn (found by a
// user walkthrough: 23 s and a line per file).
func TestPutStopsWhenServiceIsDown(t *testing.T) {
	fastRetries(t)
	defer func(d time.Duration) { outageGrace = d }(outageGrace)
	outageGrace = 0 // down from the second failure on (a real outage: 5 s)
	be := &downBE{Backend: newBackend(t)}
	c, err := New(be, NewMasterKey(), Options{Keys: mle.LocalKeys{}, Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var events atomic.Int64
	c.opts.Events.File = func(string, error) { events.Add(1) }
	dir := t.TempDir()
	const files = 200
	for i := range files {
		write(t, filepath.Join(dir, fmt.Sprintf("f%03d", i)), randBytes(2000, uint64(i)))
	}
	_, err = c.Put(ctx, []string{dir}, "")
	var op *net.OpError
	if err == nil || !errors.As(err, &op) {
		t.Fatalf("put: %v, want the dial error", err)
	}
	if n := be.puts.Load(); n >= files/2 {
		t.Fatalf("%d chunk uploads tried after the service was found down", n)
	}
	if n := events.Load(); n > 10 {
		t.Fatalf("%d files reported one by one after the run stopped", n)
	}
}
