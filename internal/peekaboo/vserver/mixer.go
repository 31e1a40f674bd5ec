package vserver

import (
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/peekaboo/wire"
)

// errStopped is returned for items submitted after the mixer stopped.
var errStopped = errors.New("v-server is shutting down")

type job struct {
	item wire.RelayItem
	ctx  context.Context
	done chan jobResult
}

type jobResult struct {
	res wire.RelayResult
	err error
}

// sender forwards one batch and returns the K-server's results in order.
type sender func(ctx context.Context, items []wire.RelayItem) ([]wire.RelayResult, error)

// mixer collects relay items into batches of up to size items, sending a batch when it is
// full or delay after its first item, in an order shuffled with a CSPRNG (ChaCha8 seeded
// from crypto/rand), so the K-server cannot tell arrival order within a batch.
type mixer struct {
	size   int
	delay  time.Duration
	send   sender
	in     chan *job
	stop   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	onSend func(n int)
}

func newMixer(size int, delay time.Duration, send sender, onSend func(int)) *mixer {
	m := &mixer{size: size, delay: delay, send: send, in: make(chan *job), stop: make(chan struct{}), onSend: onSend}
	m.wg.Add(1)
	go m.run()
	return m
}

// submit queues an item and waits for its result.
func (m *mixer) submit(ctx context.Context, it wire.RelayItem) (wire.RelayResult, error) {
	j := &job{item: it, ctx: ctx, done: make(chan jobResult, 1)}
	select {
	case m.in <- j:
	case <-m.stop:
		return wire.RelayResult{}, errStopped
	case <-ctx.Done():
		return wire.RelayResult{}, ctx.Err()
	}
	select {
	case r := <-j.done:
		return r.res, r.err
	case <-ctx.Done():
		return wire.RelayResult{}, ctx.Err()
	}
}

func (m *mixer) run() {
	defer m.wg.Done()
	for {
		var batch []*job
		select {
		case j := <-m.in:
			batch = append(batch, j)
		case <-m.stop:
			return
		}
		timer := time.NewTimer(m.delay)
	collect:
		for len(batch) < m.size {
			select {
			case j := <-m.in:
				batch = append(batch, j)
			case <-timer.C:
				break collect
			case <-m.stop:
				break collect
			}
		}
		timer.Stop()
		m.wg.Add(1)
		go m.flush(batch)
	}
}

func (m *mixer) flush(batch []*job) {
	defer m.wg.Done()
	var seed [32]byte
	rand.Read(seed[:])
	r := mrand.New(mrand.NewChaCha8(seed))
	r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
	items := make([]wire.RelayItem, len(batch))
	for i, j := range batch {
		items[i] = j.item
	}
	if m.onSend != nil {
		m.onSend(len(items))
	}
	// The batch outlives any one request: it is cancelled only when all its callers gave up.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, err := m.send(ctx, items)
	if err == nil && len(res) != len(items) {
		err = errors.New("k-server answered a different number of items")
	}
	for i, j := range batch {
		if err != nil {
			j.done <- jobResult{err: err}
		} else {
			j.done <- jobResult{res: res[i]}
		}
	}
}

// close stops taking items and waits for batches in flight.
func (m *mixer) close() {
	m.once.Do(func() { close(m.stop) })
	m.wg.Wait()
}
