package fusemount

import (
	"context"
	"sync"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/veil-project/veil/internal/dupless"
	"github.com/veil-project/veil/internal/storage"
)

// current/ follows the newest root (Config.Refresh). A lookup or listing under current/
// asks whether a newer root exists when the last check is older than the interval
// (dupless.Catalog.Follow: one request, answered "not found" while nothing changed), and
// answers from the newest (waiting for the check at most checkWait: the check goes on by
// itself). The kernel caches what it was told, so:
//   - entries and attributes under current/ are cached for the interval, not an hour, so
//     that a program using a path it looked up keeps asking (and so checking); a name
//     that is absent is not cached at all;
//   - a lookup of a name whose entry is unchanged answers the node the kernel has (its
//     cached pages stay), reading nothing (unchanged); a changed file is a new node, so a file open before the change
//     keeps reading the version it opened;
//   - once a check found a newer root, the entries that changed in every folder the
//     kernel knows are invalidated (go-fuse's notify calls, from a goroutine: the kernel
//     takes the folder's lock for them, which the request that checked may hold).

// follower is current/'s: when it last checked, and its inode (the top of what the kernel
// knows under current/).
type follower struct {
	every time.Duration // Config.Refresh; negative: never
	top   *gofs.Inode

	mu       sync.Mutex
	last     time.Time     // the last check's end (the mount's start at first)
	checking bool          // a check is under way: other requests answer from the view they have
	notified chan struct{} // closed when the last check's invalidations are sent
}

func newFollower(every time.Duration) *follower {
	done := make(chan struct{})
	close(done)
	return &follower{every: every, last: time.Now(), notified: done}
}

// timeouts sets how long the kernel keeps an entry under current/.
func (f *follower) timeouts(out *fuse.EntryOut) {
	if f.every > 0 {
		out.SetEntryTimeout(f.every)
		out.SetAttrTimeout(f.every)
	}
}

// due reports whether a check should start now, and if so marks it started.
func (f *follower) due() bool {
	if f.every < 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checking || time.Since(f.last) < f.every {
		return false
	}
	f.checking = true
	return true
}

// checkWait bounds how long the request that found a check due waits for it: a check is a
// STAT, answered within it unless the service is slow or stopped answering, and then the
// request is answered from the view the mount has while the check goes on.
const checkWait = time.Second

// current returns current/'s view (nil: no root yet), first starting a check for a newer
// root when one is due and waiting for it up to checkWait (or until ctx, the kernel's
// request, ends: EINTR). The check runs on its own, bounded by Config.ReadTimeout and the
// mount's life, not by the request: found by review, with the service stalled the request
// that found a check due waited the whole ReadTimeout for it, and each request after a
// check that outlasted --refresh started another. A check that fails is logged, and the
// next one is due --refresh after it ended.
func (e *env) current(ctx context.Context) (*dupless.View, error) {
	if !e.follow.due() {
		return e.cat.Current(), nil
	}
	done := make(chan struct{})
	go func() { defer close(done); e.check() }()
	t := time.NewTimer(checkWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.cat.Current(), nil
}

// check asks for a newer root (dupless.Catalog.Follow) and, if it found one, starts the
// kernel's invalidations (in the order of the checks).
func (e *env) check() {
	f := e.follow
	ctx, cancel := context.WithTimeout(e.life, e.timeout)
	defer cancel()
	prev, err := e.cat.Follow(ctx)
	cur := e.cat.Current() // before another check may start
	f.mu.Lock()
	f.checking, f.last = false, time.Now()
	var before, done chan struct{}
	if prev != nil {
		before, done = f.notified, make(chan struct{})
		f.notified = done
	}
	f.mu.Unlock()
	if err != nil && e.life.Err() == nil {
		e.log.Warn("veil mount: checking for a newer snapshot failed; current/ stays as it is", "err", err)
	}
	if prev == nil {
		return
	}
	e.log.Debug("veil mount: current/ follows a newer snapshot", "from", prev.Snap.Seq, "to", cur.Snap.Seq)
	go func() {
		<-before
		defer close(done)
		ctx, cancel := context.WithTimeout(e.life, e.timeout)
		defer cancel()
		e.invalidate(ctx, f.top, "", prev, cur)
	}()
}

// invalidate tells the kernel which entries of the folder dir (path under current/) and
// of the folders it knows below it differ from old to cur. A removed entry is deleted
// (programs watching the folder hear of it; an open file's link count becomes 0), a
// changed one invalidated (the next use looks it up: a new node), a folder whose mode or
// time changed gets its new attributes.
func (e *env) invalidate(ctx context.Context, dir *gofs.Inode, path string, old, cur *dupless.View) {
	changes, err := cur.Changes(ctx, old, path)
	if err != nil {
		e.log.Warn("veil mount: comparing snapshots failed; current/ shows the change within --refresh", "path", path, "err", err)
		return
	}
	kids := dir.Children()
	for _, ch := range changes {
		kid := kids[ch.Name]
		sub, isDir := (*treeDir)(nil), false
		if kid != nil {
			sub, isDir = kid.Operations().(*treeDir)
		}
		switch {
		case ch.Meta && isDir:
			n, err := cur.Lookup(ctx, path, ch.Name)
			if err == nil {
				sub.setNode(n, cur.Snap.Seq)
				kid.NotifyContent(-1, 0) // attributes only
				continue
			}
			dir.NotifyEntry(ch.Name)
		case ch.Meta: // a folder the kernel does not know: nothing cached
		case ch.Gone && kid != nil:
			// Out of go-fuse's tree first: a lookup must not answer this node again should
			// the name come back (the kernel marks a deleted folder dead).
			dir.RmChild(ch.Name)
			dir.NotifyDelete(ch.Name, kid)
		default:
			dir.NotifyEntry(ch.Name)
		}
	}
	for name, kid := range kids {
		if _, ok := kid.Operations().(*treeDir); ok && ctx.Err() == nil {
			e.invalidate(ctx, kid, storage.Join(path, name), old, cur)
		}
	}
}

// unchanged returns the node kid (the kernel's, for entry name of folder dir) stands for
// when v lists that very version of it, from v's root alone; nil otherwise (the entry is
// then read: changed, absent, or a folder without a record, whose node costs no read).
// Found by review: every lookup the kernel repeats once its entries under current/ expire
// read the entry's record again, a GET per name used per Config.Refresh.
func unchanged(kid *gofs.Inode, v *dupless.View, dir, name string) *dupless.Node {
	sum, isDir, ok := v.EntryVersion(dir, name)
	if !ok {
		return nil
	}
	var had *dupless.Node
	switch k := kid.Operations().(type) {
	case *treeDir:
		if had = k.getNode(); !isDir || sum == ([32]byte{}) {
			return nil
		}
	case *file:
		had = k.node
	case *link:
		had = k.node
	case *special:
		had = k.node
	}
	if had == nil || isDir != had.IsDir || had.Version() != sum {
		return nil
	}
	return had
}

// sameEntry returns the node to answer for kid, a node the kernel has, when it stands for
// n, read from root seq: a folder for a folder (its node becomes n unless it holds a newer
// one: setNode), anything else for the same record; nil otherwise.
func sameEntry(kid *gofs.Inode, n *dupless.Node, seq uint64) *dupless.Node {
	var had *dupless.Node
	switch k := kid.Operations().(type) {
	case *treeDir:
		if !n.IsDir {
			return nil
		}
		return k.setNode(n, seq)
	case *file:
		had = k.node
	case *link:
		had = k.node
	case *special:
		had = k.node
	}
	if had == nil || n.IsDir || had.Version() != n.Version() {
		return nil
	}
	return had
}
