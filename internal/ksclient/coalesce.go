package ksclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/veil-project/veil/internal/mle"
	"github.com/veil-project/veil/internal/oprf"
)

// MaxInflight is the number of coalesced key server requests a client has in flight: two,
// so that the client's blinding and verification of one overlap the server's evaluation
// of the other.
const MaxInflight = 2

// ErrClosed is the error of a derivation asked for, or still waiting, when the client closes.
var ErrClosed = errors.New("key server client closed")

// keyReq is one caller's share of a coalesced request.
type keyReq struct {
	digests []mle.Digest
	keys    []mle.Key
	err     error
	done    chan struct{}
}

// coalesce derives ds under the current key together with the other callers': a call goes
// out at once while one of MaxInflight slots is free, with the calls already waiting; calls
// made while all slots are busy wait and leave together (one round trip for all of them, up
// to MaxBatch digests, split further by derive where the transport needs it). The request runs under the client's context, so
// one caller's cancel never fails the others; the caller itself returns at once.
func (c *Client) coalesce(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	if len(ds) == 0 {
		return []mle.Key{}, nil
	}
	r := &keyReq{digests: ds, done: make(chan struct{})}
	select {
	case c.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.stop:
		return nil, ErrClosed
	}
	select {
	case <-r.done:
		return r.keys, r.err
	case <-ctx.Done(): // the request goes on for the others
		return nil, ctx.Err()
	}
}

// loop gathers the callers' requests into batches and starts each in a free slot.
func (c *Client) loop() {
	for {
		var batch []*keyReq
		select {
		case r := <-c.reqs:
			batch = append(batch, r)
		case <-c.stop:
			return
		}
		select { // wait for a free slot; requests arriving meanwhile join this batch
		case c.slots <- struct{}{}:
		case <-c.stop:
			finish(batch, nil, ErrClosed)
			return
		}
		n := len(batch[0].digests)
	drain: // take whatever else is already waiting, up to MaxBatch digests
		for n < c.opts.MaxBatch {
			select {
			case r := <-c.reqs:
				batch = append(batch, r)
				n += len(r.digests)
			default:
				break drain
			}
		}
		c.wg.Add(1)
		go func() {
			defer func() { <-c.slots; c.wg.Done() }()
			c.runBatch(batch, n)
		}()
	}
}

// runBatch derives the keys of a batch of callers and hands each its share.
func (c *Client) runBatch(batch []*keyReq, n int) {
	all := make([]mle.Digest, 0, n)
	for _, r := range batch {
		all = append(all, r.digests...)
	}
	keys, err := c.derive(c.ctx, c.cred.p.Current, all)
	if err == nil && len(keys) != len(all) {
		err = fmt.Errorf("%w: %d keys for %d inputs", ErrBadResponse, len(keys), len(all))
	}
	if err != nil && c.ctx.Err() != nil {
		err = ErrClosed
	}
	finish(batch, keys, err)
}

// finish hands each caller of batch its keys (in order) or err.
func finish(batch []*keyReq, keys []mle.Key, err error) {
	for _, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.keys, keys = keys[:len(r.digests):len(r.digests)], keys[len(r.digests):]
		}
		close(r.done)
	}
}

// derive derives ds under pub in requests of at most MaxBatch digests (fewer where the
// transport's datagram limits them). It returns all keys or none.
func (c *Client) derive(ctx context.Context, pub oprf.PublicKey, ds []mle.Digest) ([]mle.Key, error) {
	keys := make([]mle.Key, 0, len(ds))
	if len(ds) == 0 {
		return keys, nil
	}
	c.tr.prepare(ctx)
	step := max(1, min(c.opts.MaxBatch, c.tr.maxElements(pub.ElementSize(), pub.ProofSize())))
	if l := int(c.serverMax.Load()); l > 0 {
		step = min(step, l)
	}
	for i := 0; i < len(ds); {
		n := min(step, len(ds)-i)
		got, err := c.batch(ctx, pub, ds[i:i+n])
		if batchTooLarge(err) && n > 1 {
			// A key server configured with a smaller MaxBatch than this client's: halve
			// the request until it fits, and remember the size for later requests.
			step = (n + 1) / 2
			c.serverMax.Store(int64(step))
			continue
		}
		if err != nil {
			return nil, err
		}
		keys = append(keys, got...)
		i += n
	}
	return keys, nil
}

// errBatchTooLarge is the key server's UDP refusal of a request with more inputs than its
// MaxBatch (error code 0x05; HTTPS answers 413).
var errBatchTooLarge = errors.New("request refused: more inputs than the key server takes at once (code 5)")

// batchTooLarge reports whether err is the key server's answer that a request held more
// inputs than its MaxBatch (HTTP 413, or UDP error code 0x05).
func batchTooLarge(err error) bool {
	var se statusError
	return errors.Is(err, errBatchTooLarge) || errors.As(err, &se) && se.code == http.StatusRequestEntityTooLarge
}
