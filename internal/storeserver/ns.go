package storeserver

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Namespace is one user's view of the store, a storage.Backend in-process. The HTTP API
// serves exactly these methods.
type Namespace struct {
	s    *Service
	user string
	// secret is the SHA-256 of the secret of the account this namespace was opened for:
	// a write commits only while the user record still has it (charge), so a request
	// authenticated before its user was removed cannot write into the namespace of a new
	// user given the same name meanwhile.
	secret [32]byte
}

var _ storage.Backend = (*Namespace)(nil)

// Namespace returns user's namespace.
func (s *Service) Namespace(user string) (*Namespace, error) {
	u, ok := s.users.get(user)
	if !ok && s.meta.shared() {
		u, ok = s.reloadUser(user)
	}
	if !ok || u.admin {
		return nil, fmt.Errorf("namespace %q: %w", user, storage.ErrNotFound)
	}
	return &Namespace{s: s, user: user, secret: u.secretHash}, nil
}

// lookup returns the entry dir/name (ErrNotFound if absent).
func (n *Namespace) lookup(t metaTx, dir, name string) (entry, error) {
	e, ok, err := t.entry(n.user, dir, name)
	if err == nil && !ok {
		err = storage.ErrNotFound
	}
	return e, err
}

// dirExists reports ErrNotFound or ErrNotDir unless dir is a directory of user's.
func dirExists(t metaTx, user, dir string) error {
	if dir == "" {
		_, _, err := t.entry(user, "", "") // ErrPermission without a namespace
		return err
	}
	parent, last := storage.Split(dir)
	e, ok, err := t.entry(user, parent, last)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("directory %q: %w", dir, storage.ErrNotFound)
	case !e.isDir():
		return fmt.Errorf("%q: %w", dir, storage.ErrNotDir)
	}
	return nil
}

// ensureDirs creates dir and its missing parents, each accounted (entries per directory,
// metadata bytes). dir has passed the path limits, so this writes at most MaxDepth keys.
func (n *Namespace) ensureDirs(t metaTx, dir string, now int64) error {
	if dir == "" {
		return nil
	}
	parent := ""
	for _, c := range strings.Split(dir, "/") {
		e, ok, err := t.entry(n.user, parent, c)
		if err != nil {
			return err
		}
		if !ok {
			if err := n.addEntry(t, parent, c); err != nil {
				return err
			}
			if err := t.putEntry(n.user, parent, c, entry{kind: kindDir, modTime: now}); err != nil {
				return err
			}
		} else if !e.isDir() {
			return fmt.Errorf("%q is a file: %w", storage.Join(parent, c), storage.ErrNotDir)
		}
		parent = storage.Join(parent, c)
	}
	return nil
}

// Stat describes dir/name.
func (n *Namespace) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if err := n.s.cfg.Limits.checkPath(dir, name); err != nil {
		return storage.Info{}, err
	}
	var info storage.Info
	err := n.s.meta.view(ctx, func(t metaTx) error {
		e, err := n.lookup(t, dir, name)
		info = e.info(dir, name)
		return err
	})
	if err != nil {
		return storage.Info{}, fmt.Errorf("stat %s: %w", storage.Join(dir, name), err)
	}
	return info, nil
}

func (e entry) info(dir, name string) storage.Info {
	return storage.Info{Dir: dir, Name: name, Size: e.size, IsDir: e.isDir(), ModTime: time.Unix(0, e.modTime)}
}

// viewDir runs fn in a read transaction once dir is known to exist.
func (n *Namespace) viewDir(ctx context.Context, dir string, fn func(t metaTx) error) error {
	return n.s.meta.view(ctx, func(t metaTx) error {
		if err := dirExists(t, n.user, dir); err != nil {
			return err
		}
		return fn(t)
	})
}

// List returns the entries of dir sorted by name.
func (n *Namespace) List(ctx context.Context, dir string) ([]storage.Info, error) {
	if err := n.s.cfg.Limits.checkDir(dir); err != nil {
		return nil, err
	}
	var out []storage.Info
	err := n.viewDir(ctx, dir, func(t metaTx) error {
		out = []storage.Info{}
		return t.children(n.user, dir, func(name string, e entry) error {
			out = append(out, e.info(dir, name))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", dir, err)
	}
	return out, nil
}

// Search returns every entry named name in dir or below, sorted by path.
func (n *Namespace) Search(ctx context.Context, dir, name string) ([]storage.Info, error) {
	if err := n.s.cfg.Limits.checkPath(dir, name); err != nil {
		return nil, err
	}
	var out []storage.Info
	err := n.viewDir(ctx, dir, func(t metaTx) error {
		out = []storage.Info{}
		return t.below(n.user, dir, name, func(d, nm string, e entry) error {
			out = append(out, e.info(d, nm))
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", dir, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path() < out[j].Path() })
	return out, nil
}

// Create makes dir and its parents.
func (n *Namespace) Create(ctx context.Context, dir string) error {
	if err := n.s.cfg.Limits.checkDir(dir); err != nil {
		return err
	}
	now := time.Now().UnixNano()
	c := n.claim(dirCost(dir, 0)) // quota.go
	defer c.release()
	err := n.s.meta.update(ctx, n.user, func(t metaTx) error {
		if err := dirExists(t, n.user, ""); err != nil {
			return err
		}
		return n.ensureDirs(t, dir, now)
	})
	if err != nil {
		return fmt.Errorf("create %q: %w", dir, err)
	}
	return nil
}

// Delete removes a file or an empty directory.
func (n *Namespace) Delete(ctx context.Context, dir, name string) error {
	if err := n.s.cfg.Limits.checkPath(dir, name); err != nil {
		return err
	}
	err := n.s.meta.update(ctx, n.user, func(t metaTx) error { // group commit, as Move
		e, err := n.lookup(t, dir, name)
		if err != nil {
			return err
		}
		if e.isDir() {
			err := t.children(n.user, storage.Join(dir, name), func(string, entry) error { return storage.ErrNotEmpty })
			if err != nil {
				return err
			}
		} else {
			if err := decrefContent(t, e); err != nil {
				return err
			}
			if err := n.charge(t, -e.size, 0); err != nil {
				return err
			}
		}
		if err := n.removeEntry(t, dir, name, e.isDir()); err != nil {
			return err
		}
		return t.deleteEntry(n.user, dir, name)
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", storage.Join(dir, name), err)
	}
	n.s.metrics.ops.WithLabelValues("delete").Inc()
	return nil
}
