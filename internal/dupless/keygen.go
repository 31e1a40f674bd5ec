package dupless

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/veil-project/veil/internal/mle"
)

// keySource derives chunk keys through the key server. Concurrent requests from all
// workers are coalesced into batched KeyDeriver calls, up to maxInflight at once: a
// request goes out at once while a slot is free, and requests that arrive while all slots
// are busy wait and leave together (one round trip for all of them), so the client's
// blinding and verification overlap the server's evaluation. When derivation fails the caller falls back to a random key; after a failure the
// key server is left alone for retryAfter, so a dead KS costs one timeout, not one per chunk.
type keySource struct {
	kd         mle.KeyDeriver  // nil: no key server configured
	ctx        context.Context // batches run under it: one caller's cancel never fails the others
	cancel     context.CancelFunc
	maxBatch   int
	retryAfter time.Duration

	reqs  chan *keyReq
	slots chan struct{} // batches in flight
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu        sync.Mutex
	downUntil time.Time
	downErr   error
}

type keyReq struct {
	digests []mle.Digest
	keys    []mle.Key
	err     error
	done    chan struct{}
}

// ErrNoKeyServer is the fallback reason when no key server is configured.
var ErrNoKeyServer = errors.New("no key server configured")

func newKeySource(kd mle.KeyDeriver, maxBatch int) *keySource {
	if maxBatch <= 0 {
		maxBatch = 256
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &keySource{kd: kd, ctx: ctx, cancel: cancel, maxBatch: maxBatch, retryAfter: 30 * time.Second,
		reqs: make(chan *keyReq), slots: make(chan struct{}, maxInflight), stop: make(chan struct{})}
	if kd != nil {
		s.wg.Add(1) // the loop counts too: close waits for it, then for its batches
		go func() { defer s.wg.Done(); s.loop() }()
	}
	return s
}

// maxInflight is the number of key server requests a client has in flight.
const maxInflight = 2

func (s *keySource) close() {
	s.once.Do(func() { s.cancel(); close(s.stop) })
	s.wg.Wait()
}

// derive returns one key per digest, or the reason it could not.
func (s *keySource) derive(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	if s.kd == nil {
		return nil, ErrNoKeyServer
	}
	if len(ds) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	if time.Now().Before(s.downUntil) {
		err := s.downErr
		s.mu.Unlock()
		return nil, err
	}
	s.mu.Unlock()
	r := &keyReq{digests: ds, done: make(chan struct{})}
	select {
	case s.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stop:
		return nil, errors.New("client closed")
	}
	select {
	case <-r.done:
		return r.keys, r.err
	case <-ctx.Done(): // the batch goes on for the others
		return nil, ctx.Err()
	}
}

func (s *keySource) loop() {
	for {
		var batch []*keyReq
		select {
		case r := <-s.reqs:
			batch = append(batch, r)
		case <-s.stop:
			return
		}
		select { // wait for a free slot; requests arriving meanwhile join this batch
		case s.slots <- struct{}{}:
		case <-s.stop:
			s.fail(batch, errors.New("client closed"))
			return
		}
		n := len(batch[0].digests)
	drain: // take whatever else is already waiting, up to maxBatch digests
		for n < s.maxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
				n += len(r.digests)
			default:
				break drain
			}
		}
		s.wg.Add(1)
		go func() {
			defer func() { <-s.slots; s.wg.Done() }()
			s.run(batch, n)
		}()
	}
}

func (s *keySource) fail(batch []*keyReq, err error) {
	for _, r := range batch {
		r.err = err
		close(r.done)
	}
}

func (s *keySource) run(batch []*keyReq, n int) {
	all := make([]mle.Digest, 0, n)
	for _, r := range batch {
		all = append(all, r.digests...)
	}
	keys, err := s.kd.DeriveKeys(s.ctx, all)
	if err == nil && len(keys) != len(all) {
		err = fmt.Errorf("key server answered %d keys for %d inputs", len(keys), len(all))
	}
	if err != nil && s.ctx.Err() == nil {
		s.mu.Lock()
		s.downUntil, s.downErr = time.Now().Add(s.retryAfter), err
		s.mu.Unlock()
	}
	for _, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.keys, keys = keys[:len(r.digests)], keys[len(r.digests):]
		}
		close(r.done)
	}
}

// keyID names the key server key new keys come from, if the deriver says ("" otherwise).
func (s *keySource) keyID() string {
	if k, ok := s.kd.(interface{ KeyID() string }); ok {
		if id := k.KeyID(); len(id) <= 255 {
			return id
		}
	}
	return ""
}

// randomKey is the fail-safe key: conventional encryption, no dedup.
func randomKey() mle.Key {
	var k mle.Key
	rand.Read(k[:])
	return k
}
