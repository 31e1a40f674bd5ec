package server

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// Group runs several servers as one: `veil serve` is a Group of the key server and the
// store. The zero value is ready to use.
type Group struct {
	units  []unit
	served bool
}

type unit struct {
	name string
	srv  Server
	ls   Listeners
}

// Add puts an opened server and its bound listeners in the group. name prefixes its errors.
func (g *Group) Add(name string, s Server, ls Listeners) {
	g.units = append(g.units, unit{name, s, ls})
}

// Serve runs every server until ctx is cancelled or one of them fails; either way all are
// stopped (each draining within its own timeout) and the first failure is returned.
func (g *Group) Serve(ctx context.Context) error {
	g.served = true
	eg, ctx := errgroup.WithContext(ctx)
	for _, u := range g.units {
		eg.Go(func() error {
			if err := u.srv.Serve(ctx, u.ls); err != nil {
				return fmt.Errorf("%s: %w", u.name, err)
			}
			return nil
		})
	}
	return eg.Wait()
}

// Close closes every server (and, if Serve never ran, their listeners), last added first,
// and returns every error.
func (g *Group) Close() error {
	var errs []error
	for i := len(g.units) - 1; i >= 0; i-- {
		u := g.units[i]
		if !g.served {
			u.ls.Close()
		}
		if err := u.srv.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.name, err))
		}
	}
	g.units = nil
	return errors.Join(errs...)
}
