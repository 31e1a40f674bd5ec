package dupless

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"github.com/veil-project/veil/internal/storage"
)

// Finding the newest tree root without listing every retained one (docs/design.md, "The
// newest root"). Roots are numbered and retained (one per command until 'veil forget'), so
// a LIST of .veil/roots grows by one name per command. With a remembered root n, a command
// reads n+1 directly: absent, it reads n (which it needs anyway); present, it goes on to
// n+2, ... for rootProbeSteps roots. It lists, as before, without a remembered root, when n
// is absent or marked forgotten, when a probed number is marked, or after rootProbeSteps
// roots found. Forget keeps this sound: where it drops the root after a kept one that is
// not the newest, it leaves a gap mark (an empty object) under the dropped number, so a
// present root whose successor is absent is the newest (forget.go, forgetMarks).

// rootProbeSteps bounds the roots read forward from the remembered one before listing.
const rootProbeSteps = 8

// errRootMark is a root number that holds forget's gap mark: no root, and a reader that
// came there by probing lists instead.
var errRootMark = fmt.Errorf("forgotten (gap mark): %w", storage.ErrNotFound)

// fetchRoot reads and authenticates the newest root stored (nil if none); memSeq is the
// remembered root's number when seen. Integrity errors are errors (warnings in warn mode).
// Without probe it returns the remembered root itself when it is stored, not reading
// n+1: for a lone lock-free put, whose batch creates n+1 and so is refused (the put going
// under the lock, which probes) if another command published n+1 meanwhile. One request
// fewer, a 404 in the common case.
func (c *Client) fetchRoot(ctx context.Context, memSeq uint64, seen, probe bool) (*treeRoot, error) {
	if !seen {
		return c.listRoot(ctx)
	}
	if !probe {
		r, err := c.fetchRootSeq(ctx, memSeq)
		switch {
		case errors.Is(err, ErrIntegrity):
			return nil, c.stale(err)
		case err == nil || !errors.Is(err, storage.ErrNotFound):
			return r, err
		} // dropped by forget, or rolled back: probe and list as any command
	}
	root, ok, err := c.probeRoot(ctx, memSeq)
	if errors.Is(err, ErrIntegrity) {
		return nil, c.stale(err)
	}
	if err != nil || ok {
		return root, err
	}
	return c.listRoot(ctx)
}

// probeRoot finds the newest root from the remembered number n; ok false asks for a list.
// Root n is read alongside n+1, not after it: n+1 is absent in the common case (this
// device published the newest root), and n is then the answer, one round trip later
// instead of two.
func (c *Client) probeRoot(ctx context.Context, n uint64) (_ *treeRoot, ok bool, _ error) {
	remembered := startWork(ctx, func(ctx context.Context) (*treeRoot, error) { return c.fetchRootSeq(ctx, n) })
	defer remembered.stop() // not needed (newer roots, an error): stop reading it
	var found *treeRoot
	for s := n + 1; s <= n+rootProbeSteps && s > n; s++ {
		r, err := c.fetchRootSeq(ctx, s)
		switch {
		case errors.Is(err, errRootMark):
			return nil, false, nil
		case errors.Is(err, storage.ErrNotFound) && found != nil:
			return found, true, nil
		case errors.Is(err, storage.ErrNotFound):
			r, err := remembered.wait(ctx)
			if errors.Is(err, storage.ErrNotFound) { // dropped by forget, or rolled back: list
				return nil, false, nil
			}
			return r, err == nil, err
		case err != nil:
			return nil, false, err
		}
		found = r
	}
	return nil, false, nil // many newer roots (or the end of the numbers): list
}

// fetchRootSeq reads and authenticates root seq. A root this client already holds (the
// same object bytes as its current or newest root) is not decrypted and decoded again.
func (c *Client) fetchRootSeq(ctx context.Context, seq uint64) (*treeRoot, error) {
	rc, err := c.be.Get(ctx, rootsDir, rootName(seq))
	if err != nil {
		return nil, fmt.Errorf("tree root %d: %w", seq, err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, maxRootBytes+1))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("tree root %d: %w", seq, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("tree root %d: %w", seq, errRootMark)
	}
	if r := c.heldRoot(seq, b); r != nil {
		return r, nil
	}
	r, err := c.keys.openRoot(b, rootName(seq))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIntegrity, err)
	}
	if err := c.resolveBase(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// heldRoot returns the root this client holds (its view's current or newest, already
// authenticated) whose number is seq and whose object bytes are b, or nil.
func (c *Client) heldRoot(seq uint64, b []byte) *treeRoot {
	c.view.mu.Lock()
	cands := [2]*treeRoot{c.view.root, c.view.newest}
	c.view.mu.Unlock()
	var sum *[32]byte
	for _, r := range cands {
		if r == nil || r.Seq != seq || r.size != len(b) {
			continue
		}
		if sum == nil {
			h := sha256.Sum256(b)
			sum = &h
		}
		if r.sum == *sum {
			return r
		}
	}
	return nil
}
