package storeserver

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/veil-project/veil/internal/storage"
)

// Namespace is one user's view of the store, a storage.Backend in-process. The HTTP API
// serves exactly these methods.
type Namespace struct {
	s    *Service
	user string
}

var _ storage.Backend = (*Namespace)(nil)

// Namespace returns user's namespace.
func (s *Service) Namespace(user string) (*Namespace, error) {
	s.users.mu.RLock()
	u, ok := s.users.m[user]
	s.users.mu.RUnlock()
	if !ok || u.admin {
		return nil, fmt.Errorf("namespace %q: %w", user, storage.ErrNotFound)
	}
	return &Namespace{s: s, user: user}, nil
}

func (n *Namespace) bucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bucketNS).Bucket([]byte(n.user))
	if b == nil {
		return nil, fmt.Errorf("user %q: %w", n.user, storage.ErrPermission)
	}
	return b, nil
}

// lookup returns the user's namespace bucket and the entry dir/name (ErrNotFound if absent).
func (n *Namespace) lookup(tx *bolt.Tx, dir, name string) (*bolt.Bucket, entry, error) {
	b, err := n.bucket(tx)
	if err != nil {
		return nil, entry{}, err
	}
	e, ok, err := getEntry(b, dir, name)
	if err == nil && !ok {
		err = storage.ErrNotFound
	}
	return b, e, err
}

func getEntry(b *bolt.Bucket, dir, name string) (entry, bool, error) {
	v := b.Get(nsKey(dir, name))
	if v == nil {
		return entry{}, false, nil
	}
	e, err := parseEntry(v)
	return e, err == nil, err
}

// dirExists reports ErrNotFound or ErrNotDir unless dir is a directory.
func dirExists(b *bolt.Bucket, dir string) error {
	if dir == "" {
		return nil
	}
	parent, last := storage.Split(dir)
	e, ok, err := getEntry(b, parent, last)
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
func (n *Namespace) ensureDirs(tx *bolt.Tx, b *bolt.Bucket, dir string, now int64) error {
	if dir == "" {
		return nil
	}
	parent := ""
	for _, c := range strings.Split(dir, "/") {
		e, ok, err := getEntry(b, parent, c)
		if err != nil {
			return err
		}
		if !ok {
			if err := n.addEntry(tx, parent, c); err != nil {
				return err
			}
			if err := b.Put(nsKey(parent, c), entry{kind: kindDir, modTime: now}.marshal()); err != nil {
				return err
			}
		} else if !e.isDir() {
			return fmt.Errorf("%q is a file: %w", storage.Join(parent, c), storage.ErrNotDir)
		}
		parent = storage.Join(parent, c)
	}
	return nil
}

// incref adds a reference to blob h, recording it first if it is new; inline is the
// content of a blob kept in the database (nil for one in the blob store).
func incref(tx *bolt.Tx, h [32]byte, size int64, inline []byte) error {
	b := tx.Bucket(bucketBlobs)
	r := blobRec{size: size, inline: inline != nil}
	if v := b.Get(h[:]); v != nil {
		var err error
		if r, err = parseBlobRec(v); err != nil {
			return err
		}
	} else if inline != nil {
		d := tx.Bucket(bucketData)
		d.FillPercent = 1.0 // append-only keys: fill pages completely
		id, err := d.NextSequence()
		if err != nil {
			return err
		}
		r.dataID = id
		if err := d.Put(dataKey(id), inline); err != nil {
			return err
		}
	}
	r.refs++
	return b.Put(h[:], r.marshal())
}

// decref drops one reference; a blob at zero stays recorded until gc removes it.
func decref(tx *bolt.Tx, h [32]byte) error {
	b := tx.Bucket(bucketBlobs)
	v := b.Get(h[:])
	if v == nil {
		return fmt.Errorf("%w: entry references unknown blob %x", errRecord, h[:8])
	}
	r, err := parseBlobRec(v)
	if err != nil {
		return err
	}
	if r.refs > 0 {
		r.refs--
	}
	return b.Put(h[:], r.marshal())
}

// Stat describes dir/name.
func (n *Namespace) Stat(ctx context.Context, dir, name string) (storage.Info, error) {
	if err := n.s.cfg.Limits.checkPath(dir, name); err != nil {
		return storage.Info{}, err
	}
	var info storage.Info
	err := n.s.db.View(func(tx *bolt.Tx) error {
		_, e, err := n.lookup(tx, dir, name)
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

// viewDir runs fn in a read transaction on the namespace's bucket, once dir is known to exist.
func (n *Namespace) viewDir(dir string, fn func(b *bolt.Bucket) error) error {
	return n.s.db.View(func(tx *bolt.Tx) error {
		b, err := n.bucket(tx)
		if err != nil {
			return err
		}
		if err := dirExists(b, dir); err != nil {
			return err
		}
		return fn(b)
	})
}

// List returns the entries of dir sorted by name.
func (n *Namespace) List(ctx context.Context, dir string) ([]storage.Info, error) {
	if err := n.s.cfg.Limits.checkDir(dir); err != nil {
		return nil, err
	}
	out := []storage.Info{}
	err := n.viewDir(dir, func(b *bolt.Bucket) error {
		prefix := nsKey(dir, "")
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			e, err := parseEntry(v)
			if err != nil {
				return err
			}
			out = append(out, e.info(dir, string(k[len(prefix):])))
		}
		return nil
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
	out := []storage.Info{}
	err := n.viewDir(dir, func(b *bolt.Bucket) error {
		prefixes := [][]byte{nil}
		if dir != "" {
			prefixes = [][]byte{nsKey(dir, ""), []byte(dir + "/")}
		}
		for _, p := range prefixes {
			c := b.Cursor()
			for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
				d, nm, err := splitKey(k)
				if err != nil {
					return err
				}
				if nm != name {
					continue
				}
				e, err := parseEntry(v)
				if err != nil {
					return err
				}
				out = append(out, e.info(d, nm))
			}
		}
		return nil
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
	err := n.s.db.Update(func(tx *bolt.Tx) error {
		b, err := n.bucket(tx)
		if err != nil {
			return err
		}
		return n.ensureDirs(tx, b, dir, time.Now().UnixNano())
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
	err := n.s.commit.do(func(tx *bolt.Tx) error { // group commit, as Move
		b, e, err := n.lookup(tx, dir, name)
		if err != nil {
			return err
		}
		if e.isDir() {
			p := nsKey(storage.Join(dir, name), "")
			if k, _ := b.Cursor().Seek(p); k != nil && bytes.HasPrefix(k, p) {
				return storage.ErrNotEmpty
			}
		} else {
			if err := decref(tx, e.hash); err != nil {
				return err
			}
			if err := charge(tx, n.user, -e.size, 0); err != nil {
				return err
			}
		}
		if err := n.removeEntry(tx, dir, name, e.isDir()); err != nil {
			return err
		}
		return b.Delete(nsKey(dir, name))
	})
	if err != nil {
		return fmt.Errorf("delete %s: %w", storage.Join(dir, name), err)
	}
	n.s.metrics.ops.WithLabelValues("delete").Inc()
	return nil
}
