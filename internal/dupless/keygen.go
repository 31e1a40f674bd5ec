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

// keySource derives chunk keys through the key server client, which batches and coalesces
// the requests of concurrent callers (ksclient). When derivation fails the caller falls
// back to a random key; after a failure the key server is left alone for retryAfter, so a
// dead KS costs one timeout, not one per chunk.
type keySource struct {
	kd         mle.KeyDeriver // nil: no key server configured
	retryAfter time.Duration

	mu        sync.Mutex
	downUntil time.Time
	downErr   error
	early     aheadSlot[mle.Digest, []mle.Key] // asked for before it was needed (deriveEarly)
}

// deriveEarly starts deriving the key of d in the background; the next derive of d
// alone takes its answer instead of asking again. A lone put asks for its file's key
// while the tree root is read, not after.
func (s *keySource) deriveEarly(ctx context.Context, d mle.Digest) {
	if s.kd == nil {
		return
	}
	s.early.start(ctx, d, func(ctx context.Context) ([]mle.Key, error) { return s.deriveNow(ctx, []mle.Digest{d}) })
}

// dropEarly ends an early derivation nobody took (the file was unchanged): it is
// cancelled, so that a key server that does not answer costs an unchanged put nothing
// (and is not marked down for it), and waited for, so that none outlives its command.
func (s *keySource) dropEarly() { s.early.stop() }

// ErrNoKeyServer is the fallback reason when no key server is configured.
var ErrNoKeyServer = errors.New("no key server configured")

func newKeySource(kd mle.KeyDeriver) *keySource {
	return &keySource{kd: kd, retryAfter: 30 * time.Second}
}

// derive returns one key per digest, or the reason it could not.
func (s *keySource) derive(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
	if len(ds) == 1 {
		if w := s.early.take(ds[0]); w != nil {
			return w.wait(ctx)
		}
	}
	return s.deriveNow(ctx, ds)
}

func (s *keySource) deriveNow(ctx context.Context, ds []mle.Digest) ([]mle.Key, error) {
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
	keys, err := s.kd.DeriveKeys(ctx, ds)
	if err == nil && len(keys) != len(ds) {
		err = fmt.Errorf("key server answered %d keys for %d inputs", len(keys), len(ds))
	}
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		s.downUntil, s.downErr = time.Now().Add(s.retryAfter), err
		s.mu.Unlock()
	}
	if err != nil {
		return nil, err
	}
	return keys, nil
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
