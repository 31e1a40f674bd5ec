package storeserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/storewire"
)

// Faults that are not the request's: a full disk and an unreachable blob store get their
// own codes (507 no_space, 503 unavailable) instead of "internal error".

// classifyFault wraps a full-disk error in storewire.ErrNoSpace.
func classifyFault(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w: %v", storewire.ErrNoSpace, err)
	}
	return err
}

// breaker is a circuit breaker in front of a remote blob store (--blobs s3://...). The
// first failure that is an outage (anything but an answer the storage contract defines,
// or the caller's own cancellation) opens it; while open, every blob operation fails at
// once with storewire.ErrUnavailable instead of waiting for the S3 client's own retries
// (8 s per request before). A probe every interval, bounded by probeTimeout, closes it
// again when the store answers, and opens it when the store stops answering even with
// no request in flight: a dead backend is noticed within interval + probeTimeout.
type breaker struct {
	mu       sync.Mutex
	open     bool
	cause    error
	since    time.Time
	opened   chan struct{} // closed when the breaker opens: operations in flight give up
	onChange func(open bool, cause error)
}

// guard runs op with a context that ends when the breaker opens, so an operation already
// waiting on a dead store fails as soon as the probe notices, not after its own retries.
func (b *breaker) guard(ctx context.Context, op func(ctx context.Context) error) error {
	b.mu.Lock()
	if b.open {
		err := fmt.Errorf("%w since %s: %v", storewire.ErrUnavailable, b.since.UTC().Format(time.RFC3339), b.cause)
		b.mu.Unlock()
		return err
	}
	if b.opened == nil {
		b.opened = make(chan struct{})
	}
	opened := b.opened
	b.mu.Unlock()
	octx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-opened:
			cancel()
		case <-octx.Done():
		}
	}()
	err := op(octx)
	select {
	case <-opened:
		if err != nil {
			return fmt.Errorf("%w: %v", storewire.ErrUnavailable, b.cause)
		}
	default:
	}
	return b.result(err)
}

// outage reports whether err says the store did not answer.
func outage(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return false
	}
	for _, e := range []error{storage.ErrNotFound, storage.ErrExists, storage.ErrNotEmpty, storage.ErrIsDir,
		storage.ErrNotDir, storage.ErrInvalidName, storage.ErrIntegrity, storage.ErrPermission,
		storage.ErrTooLarge, storage.ErrQuota, storage.ErrSizeMismatch} {
		if errors.Is(err, e) {
			return false
		}
	}
	return true
}

// state reports whether the breaker is open, and why.
func (b *breaker) state() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.open, b.cause
}

func (b *breaker) set(open bool, cause error) {
	b.mu.Lock()
	changed := b.open != open
	b.open, b.cause = open, cause
	if changed {
		b.since = time.Now()
		if open && b.opened != nil {
			close(b.opened)
			b.opened = nil
		}
	}
	b.mu.Unlock()
	if changed && b.onChange != nil {
		b.onChange(open, cause)
	}
}

// result records an operation's outcome and returns its error, an outage wrapped in
// storewire.ErrUnavailable.
func (b *breaker) result(err error) error {
	if !outage(err) {
		return err
	}
	b.set(true, err)
	return fmt.Errorf("%w: %v", storewire.ErrUnavailable, err)
}

// probeLoop checks the store every interval until ctx ends.
func (b *breaker) probeLoop(ctx context.Context, be storage.Backend, interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		_, err := be.Stat(pctx, "", "blobs")
		cancel()
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, storage.ErrNotFound) {
			err = nil // the store answered
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		b.set(outage(err), err)
	}
}

// guardedBlobs puts a breaker in front of a blob store.
type guardedBlobs struct {
	inner blobStore
	br    *breaker
}

func (g guardedBlobs) commit(ctx context.Context, b blobID, tmp string, size int64) error {
	return g.br.guard(ctx, func(ctx context.Context) error { return g.inner.commit(ctx, b, tmp, size) })
}

func (g guardedBlobs) open(ctx context.Context, b blobID) (rc io.ReadCloser, n int64, err error) {
	err = g.br.guard(ctx, func(ctx context.Context) error {
		rc, n, err = g.inner.open(context.WithoutCancel(ctx), b) // the body outlives this call
		return err
	})
	return rc, n, err
}

func (g guardedBlobs) remove(ctx context.Context, b blobID) error {
	return g.br.guard(ctx, func(ctx context.Context) error { return g.inner.remove(ctx, b) })
}

func (g guardedBlobs) list(ctx context.Context, fn func(blobID) error) error {
	return g.br.guard(ctx, func(ctx context.Context) error { return g.inner.list(ctx, fn) })
}
