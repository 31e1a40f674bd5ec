package dupless

import (
	"context"
	"sync/atomic"
)

// work is something started in the background ahead of its use (a root, a record or a
// key read while another round trip is in flight): wait takes its result, stop ends it
// when it is not needed (cancelled, and waited for, so that none outlives its command).
type work[V any] struct {
	done   chan struct{}
	cancel context.CancelFunc
	v      V
	err    error
}

func startWork[V any](ctx context.Context, fn func(context.Context) (V, error)) *work[V] {
	ctx, cancel := context.WithCancel(ctx)
	w := &work[V]{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(w.done)
		defer cancel()
		w.v, w.err = fn(ctx)
	}()
	return w
}

// wait returns the work's result, or ctx's error if ctx ends first.
func (w *work[V]) wait(ctx context.Context) (V, error) {
	select {
	case <-w.done:
		return w.v, w.err
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
}

// stop cancels the work (nothing, if it is done) and waits for it to end.
func (w *work[V]) stop() {
	w.cancel()
	<-w.done
}

// aheadSlot holds one work started for a key before anyone asked for it: the first take
// of the same key gets it; stop ends one nobody took.
type aheadSlot[K comparable, V any] struct {
	p atomic.Pointer[keyedWork[K, V]]
}

type keyedWork[K comparable, V any] struct {
	key K
	w   *work[V]
}

func (s *aheadSlot[K, V]) start(ctx context.Context, key K, fn func(context.Context) (V, error)) {
	s.p.Store(&keyedWork[K, V]{key, startWork(ctx, fn)})
}

// take returns the work started for key and empties the slot, or nil.
func (s *aheadSlot[K, V]) take(key K) *work[V] {
	if k := s.p.Load(); k != nil && k.key == key && s.p.CompareAndSwap(k, nil) {
		return k.w
	}
	return nil
}

func (s *aheadSlot[K, V]) stop() {
	if k := s.p.Swap(nil); k != nil {
		k.w.stop()
	}
}
