package storeserver

import (
	"context"
	"fmt"

	"github.com/veil-project/veil/internal/server"
)

// Run opens the store at dir, serves it on listen until ctx is cancelled, and closes it:
// what 'veil store serve' does. ready, if not nil, is called with the bound address once
// the listener is open.
func Run(ctx context.Context, dir, listen string, cfg Config, ready func(addr string)) error {
	s, err := Open(dir, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	if !cfg.InsecureHTTP { // a certificate serve refuses is refused before ready says "serving"
		if _, err := s.serverTLS(); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
	}
	ls, err := server.Listen(listen, "")
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if ready != nil {
		ready(ls.Addr())
	}
	return s.Serve(ctx, ls)
}

// With opens the store at dir (which no server may hold), calls fn, and closes it: for the
// offline commands (user, stats, gc, fsck).
func With(dir string, fn func(*Service) error) error { return WithConfig(dir, Config{}, fn) }

// WithConfig is With for a store opened with cfg (its blob store).
func WithConfig(dir string, cfg Config, fn func(*Service) error) error {
	s, err := Open(dir, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}
