package dupless

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// batchQueue sends small objects (chunk ciphertexts and key records of at most
// storage.BatchMaxObjectSize bytes) to a storage service that takes batch uploads
// (storage.BatchPutter): many objects per round trip and per commit on the service. Like
// the service's group commit it adds no delay to a lone object: it goes out at once when
// no batch is in flight; objects queued while one is leave together when it is answered
// (or at once, up to maxBatchRequests in flight, once they fill a batch). Before session 9
// every free request took what was waiting, and two thirds of a tree's batches carried one
// or two objects (a commit each on the service). Each object is still its own object (a chunk under its own name, which the
// service deduplicates); only the transport is shared. A batch that fails is sent again
// one object at a time, so each caller gets its own answer.
type batchQueue struct {
	bp storage.BatchPutter
	be storage.Backend

	mu       sync.Mutex
	queue    []*batchItem
	queued   int // bytes of data in queue
	inflight int
	off      bool // the service has no batch upload (an older one): one Put each
}

type batchItem struct {
	ctx  context.Context
	obj  storage.Object
	done chan error
}

// maxBatchRequests bounds the batch requests in flight; objects queue behind them.
const maxBatchRequests = 4

// newBatchQueue returns a queue for be, or nil if it takes no batch uploads.
func newBatchQueue(be storage.Backend) *batchQueue {
	bp, ok := be.(storage.BatchPutter)
	if !ok {
		return nil
	}
	return &batchQueue{bp: bp, be: be}
}

// putObject stores a small object through the batch queue when there is one, else with Put.
func (c *Client) putObject(ctx context.Context, dir, name string, data []byte) error {
	q := c.batch
	if q == nil || len(data) > storage.BatchMaxObjectSize || q.disabled() {
		return c.be.Put(ctx, dir, name, bytes.NewReader(data), int64(len(data)))
	}
	return q.put(ctx, storage.Object{Dir: dir, Name: name, Data: data})
}

// put queues obj and waits for its answer.
func (q *batchQueue) put(ctx context.Context, obj storage.Object) error {
	it := &batchItem{ctx: ctx, obj: obj, done: make(chan error, 1)}
	q.mu.Lock()
	q.queue = append(q.queue, it)
	q.queued += len(obj.Data)
	q.kick()
	q.mu.Unlock()
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// putObjectCond is putObject of obj, which may carry a condition (recordcas.go): through
// the batch queue, or alone as a batch of one (a larger object); without the condition if
// no batch can carry it.
func (c *Client) putObjectCond(ctx context.Context, obj storage.Object) error {
	if !conditional(obj) {
		return c.putObject(ctx, obj.Dir, obj.Name, obj.Data)
	}
	q := c.batch
	if q == nil || q.disabled() { // recordCond gives no condition then; the route went since
		return errNoBatchRoute(obj)
	}
	if len(obj.Data) > storage.BatchMaxObjectSize {
		if _, large := c.be.(storage.LargeBatcher); !large || len(obj.Data) > storage.BatchMaxBytes || c.noLarge.Load() {
			return c.putObject(ctx, obj.Dir, obj.Name, obj.Data)
		}
		err := storage.PutAll(ctx, c.be, []storage.Object{obj})
		if errors.Is(err, storage.ErrTooLarge) {
			// Refused for its size as a batch object (a service whose --max-batch-bytes is
			// lower), nothing stored: written as a record too large for any batch is,
			// without the condition; large batch objects stop (largeRefused).
			c.noLarge.Store(true)
			c.log.Debug("large record refused as a batch object; written without its condition", "err", err)
			return c.putObject(ctx, obj.Dir, obj.Name, obj.Data)
		}
		return err
	}
	return q.put(ctx, obj)
}

// batched reports whether putObject sends an object of n bytes through the batch queue.
func (c *Client) batched(n int) bool {
	return c.batch != nil && n <= storage.BatchMaxObjectSize && !c.batch.disabled()
}

func (q *batchQueue) disabled() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.off
}

// maxPartialRequests bounds the batch requests in flight that a batch short of the limits
// may join: a lone object leaves at once, but objects arriving in a trickle while a batch
// is out wait for its answer and leave together. A batch that fills up leaves at once,
// up to maxBatchRequests.
const maxPartialRequests = 1

// kick starts batches while requests are free and objects wait (q.mu held).
func (q *batchQueue) kick() {
	for q.inflight < maxBatchRequests && len(q.queue) > 0 {
		if q.inflight >= maxPartialRequests && !q.full() {
			return // the answer of one in flight kicks again
		}
		if batch := q.take(); len(batch) > 0 {
			q.inflight++
			go q.send(batch)
		}
	}
}

// full reports whether the objects waiting fill a batch (q.mu held).
func (q *batchQueue) full() bool {
	return len(q.queue) >= storage.BatchMaxObjects || q.queued >= storage.BatchMaxBytes
}

// take removes the next batch from the queue, within the batch limits; objects whose
// caller gave up are answered and dropped (q.mu held).
func (q *batchQueue) take() []*batchItem {
	var out []*batchItem
	n, size := 0, 0
	for ; n < len(q.queue) && len(out) < storage.BatchMaxObjects; n++ {
		it := q.queue[n]
		if err := it.ctx.Err(); err != nil {
			it.done <- err
			continue
		}
		if size+len(it.obj.Data) > storage.BatchMaxBytes {
			break
		}
		out = append(out, it)
		size += len(it.obj.Data)
	}
	for _, it := range q.queue[:n] {
		q.queued -= len(it.obj.Data)
	}
	q.queue = q.queue[n:]
	return out
}

// send stores one batch and answers its callers; then the next batch may start.
func (q *batchQueue) send(batch []*batchItem) {
	objs := make([]storage.Object, len(batch))
	for i, it := range batch {
		objs[i] = it.obj
	}
	// The first caller's context: if it is cancelled the batch fails, and the others are
	// sent alone under their own (alone).
	err := q.bp.PutBatch(batch[0].ctx, objs)
	if err == nil {
		for _, it := range batch {
			it.done <- nil
		}
	} else {
		if errors.Is(err, storage.ErrNotFound) { // no such route: a service without batches
			q.mu.Lock()
			q.off = true
			q.mu.Unlock()
		}
		q.alone(batch)
	}
	q.mu.Lock()
	q.inflight--
	q.kick()
	q.mu.Unlock()
}

// alone sends each object of a failed batch with its own Put (8 at a time); a conditional
// one as a batch of one, so that its caller learns whether its own condition held.
func (q *batchQueue) alone(batch []*batchItem) {
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, it := range batch {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			o := it.obj
			if conditional(o) {
				if q.disabled() { // the batch found no batch route: no condition can be carried
					it.done <- errNoBatchRoute(o)
					return
				}
				it.done <- q.bp.PutBatch(it.ctx, []storage.Object{o})
				return
			}
			it.done <- q.be.Put(it.ctx, o.Dir, o.Name, bytes.NewReader(o.Data), int64(len(o.Data)))
		}()
	}
	wg.Wait()
}
