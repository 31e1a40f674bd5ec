package dupless

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// RootCheck says what a reader does when the tree root does not vouch for what it reads.
type RootCheck int

const (
	RootStrict RootCheck = iota // an error (default)
	RootWarn                    // a logged warning, and the read goes on (--no-root-check)
)

// treeView is what a Client knows of the namespace's tree root: the newest verified root
// and, while a command that changes the namespace runs, the record changes it made.
type treeView struct {
	mu       sync.Mutex
	root     *treeRoot            // nil: the namespace has no root (new, or written before roots)
	newest   *treeRoot            // the newest root refresh read and checked (root unless pinned)
	delta    map[string]*[32]byte // storage path -> hash of the record written (nil: deleted)
	read     map[string][]byte    // records read that root lists, kept if the command replaces them
	expect   map[string]*[32]byte // storage path -> the record another command wrote there, kept (nil: none): what the next write replaces (recordcas.go)
	tracking bool
	warned   bool // "no root yet" said once
}

// stale returns err in strict mode; in warn mode it logs it and returns nil.
func (c *Client) stale(err error) error {
	if c.opts.RootCheck == RootWarn {
		c.log.Warn("tree root check failed; going on (--no-root-check)", "err", err)
		return nil
	}
	return err
}

// refresh checks that the namespace is this key's and loads its newest tree root, checked
// against the newest this device has seen. Every command starts with it. A newest root
// that opens under this master key (authenticated encryption under a key derived from it)
// proves the namespace is this key's as the key check does: only without one (no root, or
// one that does not open) is .veil/keycheck read, so a foreign key is refused either way
// before anything is written.
func (c *Client) refresh(ctx context.Context) error { return c.refreshFrom(ctx, true) }

// refreshFrom is refresh; without probe it reads only the remembered root when there is
// one (a lone lock-free put, whose batch is refused if that root is no longer the newest:
// fetchRoot).
func (c *Client) refreshFrom(ctx context.Context, probe bool) error {
	root, err := c.latestRootFrom(ctx, probe)
	if !c.keyChecked.Load() && (err != nil || root == nil) { // lock's checkOwner may have done it
		if kerr := c.checkKey(ctx); kerr != nil {
			return kerr
		}
	}
	if err != nil {
		return err
	}
	if root != nil {
		c.keyChecked.Store(true)
	}
	c.view.mu.Lock()
	c.view.newest, c.view.root = root, root
	if c.pin != nil { // reads go to the pinned snapshot (checked above against the newest)
		c.view.root = c.pin
	}
	c.view.mu.Unlock()
	return nil
}

// checkKey verifies the namespace's key check without writing it: a namespace of another
// master key is ErrForeignKey, for reading commands too.
func (c *Client) checkKey(ctx context.Context) error {
	_, err := c.readRecord(ctx, veilDir, keyCheck)
	switch {
	case err == nil:
		c.keyChecked.Store(true)
		return nil
	case errors.Is(err, storage.ErrNotFound): // nothing stored yet
		return nil
	case errors.Is(err, ErrRecord):
		return ErrForeignKey
	}
	if e := notAnswering(err); e != nil {
		return e
	}
	return fmt.Errorf("reading your storage: %w", err)
}

// latestRoot returns the newest root stored (nil if none), after checking it against
// c.mem and remembering it there if it is newer.
func (c *Client) latestRoot(ctx context.Context) (*treeRoot, error) {
	return c.latestRootFrom(ctx, true)
}

// latestRootFrom is latestRoot; probe as fetchRoot's.
func (c *Client) latestRootFrom(ctx context.Context, probe bool) (*treeRoot, error) {
	memSeq, memSum, seen, err := c.mem.Load()
	if err != nil {
		return nil, err
	}
	root, err := c.fetchRoot(ctx, memSeq, seen, probe)
	switch {
	case err != nil:
		return nil, err
	case root == nil && seen:
		return nil, c.stale(fmt.Errorf("no tree root stored, this device saw number %d: %w", memSeq, ErrRollback))
	case root == nil:
		return nil, nil
	case seen && root.Seq < memSeq:
		return root, c.stale(fmt.Errorf("tree root %d, this device saw %d: %w", root.Seq, memSeq, ErrRollback))
	case seen && root.Seq == memSeq && root.sum != memSum:
		return root, c.stale(fmt.Errorf("tree root %d differs from the one this device saw: %w", root.Seq, ErrRollback))
	case !seen || root.Seq > memSeq:
		if err := c.mem.Save(root.Seq, root.sum); err != nil {
			return nil, fmt.Errorf("remember tree root: %w", err)
		}
	}
	return root, nil
}

// listRoot reads and authenticates the newest root stored (nil if none), found by listing
// every retained root: what fetchRoot does without a remembered root or on any doubt.
func (c *Client) listRoot(ctx context.Context) (*treeRoot, error) {
	infos, err := c.be.List(ctx, rootsDir)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("list tree roots: %w", err)
	}
	var seq uint64
	found := false
	for _, i := range infos {
		if s, ok := parseRootName(i.Name); ok && !i.IsDir && (!found || s > seq) {
			seq, found = s, true
		}
	}
	if !found {
		return nil, nil
	}
	root, err := c.fetchRootSeq(ctx, seq)
	if errors.Is(err, errRootMark) { // forget never marks the newest number
		err = fmt.Errorf("%w: the highest tree root number %d holds a gap mark", ErrIntegrity, seq)
	}
	if errors.Is(err, ErrIntegrity) {
		return nil, c.stale(err)
	}
	return root, err
}

// checkRecord verifies that the record object b read from path is the one the newest root
// (or this command's own changes) lists.
func (c *Client) checkRecord(path string, b []byte) error {
	if strings.HasPrefix(path, veilDir+"/") {
		return nil
	}
	h := sha256.Sum256(b)
	c.view.mu.Lock()
	var ok bool
	if d, changed := c.view.delta[path]; changed {
		ok = d != nil && *d == h
	} else if c.view.root == nil {
		warn := !c.view.warned
		c.view.warned = true
		c.view.mu.Unlock()
		if warn {
			c.log.Warn("this storage location has no tree root yet (its first command did not finish, or an older veil wrote it): " +
				"records are authenticated but rollback is not detected until the next put")
		}
		return nil
	} else {
		e, listed := c.view.root.Entries[path]
		ok = listed && e == h
	}
	c.view.mu.Unlock()
	if ok {
		return nil
	}
	return c.stale(fmt.Errorf("%s: %w", c.describe(path), ErrStale))
}

// missing is the error for a record that is absent although the root lists it (the
// storage service deleted it), or nil if the root does not list it.
func (c *Client) missing(path string) error {
	c.view.mu.Lock()
	listed := false
	if d, changed := c.view.delta[path]; changed {
		listed = d != nil
	} else if c.view.root != nil {
		_, listed = c.view.root.Entries[path]
	}
	c.view.mu.Unlock()
	if !listed {
		return nil
	}
	return c.stale(fmt.Errorf("%s: deleted: %w", c.describe(path), ErrStale))
}

// rootPaths returns the record paths the root lists below the encrypted directory dir
// ("" for all), with this command's changes applied.
func (c *Client) rootPaths(dir string) []string {
	c.view.mu.Lock()
	defer c.view.mu.Unlock()
	var out []string
	add := func(p string) {
		if dir == "" || strings.HasPrefix(p, dir+"/") {
			out = append(out, p)
		}
	}
	if c.view.root != nil {
		for p := range c.view.root.Entries {
			if _, changed := c.view.delta[p]; !changed {
				add(p)
			}
		}
	}
	for p, d := range c.view.delta {
		if d != nil {
			add(p)
		}
	}
	return out
}

// describe turns a record's storage path into the plain path, for messages.
func (c *Client) describe(path string) string {
	dir, name := storage.Split(path)
	plain, err := c.keys.decPath(dir)
	if err != nil {
		return path
	}
	if name == dirMetaName {
		if plain == "" {
			return "/"
		}
		return plain
	}
	base, _ := cutSuffix(name, keySuffix)
	if n, err := c.keys.decName(base); err == nil {
		return joinPath(plain, n)
	}
	return path
}

// unseen returns the plain paths of the records the root lists below the encrypted
// directory dir that are not in seen: the storage service deleted them.
func (c *Client) unseen(dir string, seen map[string]bool) []string {
	var out []string
	for _, p := range c.rootPaths(dir) {
		if !seen[p] {
			out = append(out, c.describe(p))
		}
	}
	sort.Strings(out)
	return out
}

// rootChildren returns the entries the root implies directly in the encrypted directory
// dir: record names (false) and subdirectory names (true); nil if there is no root.
func (c *Client) rootChildren(dir string) map[string]bool {
	c.view.mu.Lock()
	noRoot := c.view.root == nil
	c.view.mu.Unlock()
	if noRoot {
		return nil
	}
	out := map[string]bool{}
	for _, p := range c.rootPaths(dir) {
		rest := p
		if dir != "" {
			rest = p[len(dir)+1:]
		}
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			out[rest[:i]] = true
		} else if rest != dirMetaName {
			out[rest] = false
		}
	}
	return out
}

// findInRoot answers Find from the root, which lists every record: the files named enc
// and the directories named enc. ok is false if there is no root (the storage service's
// search is used then).
func (c *Client) findInRoot(enc string) (paths []string, ok bool) {
	c.view.mu.Lock()
	noRoot := c.view.root == nil
	c.view.mu.Unlock()
	if noRoot {
		return nil, false
	}
	set := map[string]bool{}
	for _, p := range c.rootPaths("") {
		parts := strings.Split(p, "/")
		for i, part := range parts[:len(parts)-1] { // directories on the way
			if part == enc {
				if d, err := c.keys.decPath(strings.Join(parts[:i+1], "/")); err == nil {
					set[d] = true
				}
			}
		}
		if parts[len(parts)-1] == enc+keySuffix {
			set[c.describe(p)] = true
		}
	}
	for p := range set {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, true
}
