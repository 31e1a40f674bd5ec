package dupless

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A Catalog is what a mount browses: the newest tree, held from the start, and every other
// retained snapshot loaded when first browsed. A snapshot's listing is its whole tree root
// (one object naming every record: about 280 bytes a file once indexed), so a Catalog
// holds at most a bounded number of them, dropping the least recently used and loading it
// again when browsed again. Found by review: the mount loaded every snapshot's root at
// start (40 snapshots of 3,000 files: 26 MiB; 50 of 100,000 files: about 1.4 GB).

// Catalog is the snapshots retained when it was opened (OpenCatalog), for a mount; Follow
// brings it to roots published since.
type Catalog struct {
	c       *Client
	keep    int                  // loaded snapshots held besides current
	current atomic.Pointer[View] // the newest snapshot (nil: none yet)
	roots   atomic.Pointer[rootSet]
	listing ctxLock // held while Snapshots describes the roots
	follow  ctxLock // held by Follow
	// confirmed is when current was last known the newest (the start of the check that
	// found so, or of OpenCatalog's read): held under follow.
	confirmed time.Time

	mu     sync.Mutex
	loaded map[uint64]*loadedView
	clock  uint64 // counts uses, for the least recently used
}

// rootSet is the retained roots a Catalog lists: replaced whole by Follow.
type rootSet struct {
	seqs    []uint64             // the retained roots' numbers, oldest first, current's last
	sizes   map[uint64]int64     // their objects' sizes as listed (the snapshot cache's check)
	written map[uint64]time.Time // and their times as listed
	snaps   []Snapshot           // described by the first Snapshots (under listing)
}

// ctxLock is a mutex whose lock gives up when ctx ends: a FUSE request the kernel
// interrupts while it waits answers EINTR at once. Found by review: a snapshots/ listing
// waited on a sync.Mutex behind one stalled on the service, and no interrupt ended it.
type ctxLock chan struct{}

func newCtxLock() ctxLock { return make(ctxLock, 1) }

func (l ctxLock) lock(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l ctxLock) unlock() { <-l }

// loadedView is a snapshot being loaded (done open) or loaded.
type loadedView struct {
	done chan struct{}
	v    *View
	err  error
	used uint64
}

// OpenCatalog checks the namespace as every command does (its key, the newest root
// against this device's memory) and lists the retained roots' numbers; it reads no root
// but the newest. keep bounds the other snapshots loaded at once (at least 1).
func (c *Client) OpenCatalog(ctx context.Context, keep int) (*Catalog, error) {
	start := time.Now()
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	k := &Catalog{c: c, keep: max(keep, 1), loaded: map[uint64]*loadedView{}, listing: newCtxLock(), follow: newCtxLock(), confirmed: start}
	c.view.mu.Lock()
	newest := c.view.newest
	c.view.mu.Unlock()
	k.roots.Store(&rootSet{})
	if newest == nil {
		return k, nil
	}
	rs, err := c.listRetained(ctx, newest.Seq)
	if err != nil {
		return nil, err
	}
	k.current.Store(newView(c, newest))
	k.roots.Store(rs)
	return k, nil
}

// listRetained lists the retained roots up to newest (one LIST).
func (c *Client) listRetained(ctx context.Context, newest uint64) (*rootSet, error) {
	written, sizes, err := c.rootSizes(ctx)
	if err != nil {
		return nil, err
	}
	rs := &rootSet{sizes: sizes, written: written}
	for s := range written {
		if sizes[s] > 0 && s < newest { // newer ones: published since refresh, not this catalog's; 0: a gap mark
			rs.seqs = append(rs.seqs, s)
		}
	}
	slices.Sort(rs.seqs)
	rs.seqs = append(rs.seqs, newest)
	return rs, nil
}

func newView(c *Client, r *treeRoot) *View {
	return &View{c: c, root: r, dirs: indexDirs(r), Snap: snapshotOf(r)}
}

// Current is the newest snapshot when the Catalog was opened or last followed (nil if
// there is none).
func (k *Catalog) Current() *View { return k.current.Load() }

// Count is the number of snapshots the Catalog lists (a forget may drop some meanwhile).
func (k *Catalog) Count() int { return len(k.roots.Load().seqs) }

// Snapshots describes the Catalog's snapshots, oldest first, reading each root once (on
// the first call, and the first after Follow found new roots: only the roots neither
// held nor in the snapshot cache) and keeping only its description; one a forget dropped
// meanwhile is left out. A call made while another describes waits for it, or for ctx.
func (k *Catalog) Snapshots(ctx context.Context) ([]Snapshot, error) {
	if err := k.listing.lock(ctx); err != nil {
		return nil, err
	}
	defer k.listing.unlock()
	rs := k.roots.Load()
	if rs.snaps != nil || len(rs.seqs) == 0 {
		return rs.snaps, nil
	}
	// Roots not described yet decoded 4 at once: each is as large as its listing.
	out, err := k.c.describeRoots(ctx, rs.seqs, rs.sizes, rs.written, 4, k.held)
	if err != nil {
		return nil, err
	}
	rs.snaps = out
	return out, nil
}

// held returns root s when the Catalog holds it (current, or a loaded snapshot).
func (k *Catalog) held(s uint64) (*treeRoot, bool) {
	if cur := k.Current(); cur != nil && cur.Snap.Seq == s {
		return cur.root, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if l := k.loaded[s]; l != nil && l.v != nil {
		return l.v.root, true
	}
	return nil, false
}

// View returns snapshot seq, loading its root unless it is current or still loaded; a
// load drops the least recently used loaded snapshot beyond the bound. Readers of one
// snapshot being loaded wait for that load.
func (k *Catalog) View(ctx context.Context, seq uint64) (*View, error) {
	if cur := k.Current(); cur != nil && seq == cur.Snap.Seq {
		return cur, nil
	}
	for {
		k.mu.Lock()
		k.clock++
		l := k.loaded[seq]
		if l == nil {
			break // loaded below, k.mu held
		}
		l.used = k.clock
		k.mu.Unlock()
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err == nil {
			return l.v, nil
		}
		if ctx.Err() != nil || !errors.Is(l.err, context.Canceled) && !errors.Is(l.err, context.DeadlineExceeded) {
			return nil, l.err
		}
		// the first reader gave up (its request was interrupted): load it anew
	}
	l := &loadedView{done: make(chan struct{}), used: k.clock}
	k.loaded[seq] = l
	k.mu.Unlock()
	var v *View
	r, err := k.c.fetchRootSeq(ctx, seq)
	if err == nil {
		v = newView(k.c, r)
	}
	k.mu.Lock() // evict reads l.v of every entry
	l.v, l.err = v, err
	if err != nil { // not kept: the next reader tries again
		delete(k.loaded, seq)
	} else {
		k.clock++
		l.used = k.clock // as used now: it is, by this reader
		k.evict()
	}
	k.mu.Unlock()
	close(l.done)
	return v, err
}

// evict drops the least recently used loaded snapshots beyond k.keep (k.mu held). One
// being loaded is not counted nor dropped.
func (k *Catalog) evict() {
	for {
		var oldest uint64
		var victim *loadedView
		n := 0
		for s, l := range k.loaded {
			if l.v == nil {
				continue
			}
			n++
			if victim == nil || l.used < victim.used {
				oldest, victim = s, l
			}
		}
		if n <= k.keep {
			return
		}
		delete(k.loaded, oldest)
	}
}

// ReadAt is View.ReadAt for a node of any of the Catalog's snapshots: reading a file needs
// its record only, not its snapshot's listing, which may have been dropped meanwhile.
func (k *Catalog) ReadAt(ctx context.Context, n *Node, p []byte, off int64) (int, error) {
	return k.c.readAt(ctx, n, p, off)
}
