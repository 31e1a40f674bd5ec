package dupless

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/veil-project/veil/internal/storage"
)

// Ownership and locking of a user's namespace on the storage service.
//
// .veil/keycheck is a sealed record that only this master key opens. The first command that
// changes the namespace writes it; every later one checks it, so a second 'veil init' (a new
// master key) pointed at the same namespace can never prune, remove or move the first key's
// data, whose names it cannot even read.
//
// .veil/locks/ holds one object per running command: "shared-..." for put, mv, rm, mkdir,
// "exclusive-..." for prune. A command writes its lock, then lists the others: a shared lock
// conflicts with an exclusive one, an exclusive lock with any. Both sides write before they
// look, so two conflicting commands cannot both proceed. Locks are refreshed while a command
// runs (a lease) and count as stale (abandoned by a crash) lockStale after their last refresh.
// A lock's name also says which host and process hold it (kind-time-id-host-pid; the host
// as an 8-byte tag made with the names key, so the storage service learns no host name): a
// lock of this host whose process no longer exists is abandoned too, and taken over at once.
// BreakLocks removes every lock (prune --break-lock), for an operator who knows better.

const (
	veilDir     = ".veil"
	keyCheck    = "keycheck"
	locksDir    = ".veil/locks"
	lockStale   = 2 * time.Minute
	lockRefresh = lockStale / 4
	lockRetry   = 10 * time.Second
)

// hostTag names this host in lock names: deterministic under the user's names key, so
// the same host always gets the same tag and the storage service cannot read it. The host
// is the host name with what makes a pid meaningful, when this system says: the kernel's
// boot and the PID namespace (hostIdentity). Two machines of one host name (default
// images, containers sharing the host's name) get different tags, so neither takes the
// other's live lock for its own dead one (found by review: the host name alone did).
func (c *Client) hostTag() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "unknown"
	}
	if id, ok := hostIdentity(); ok {
		h += "\x00" + id
	}
	t, err := c.keys.names.EncryptDeterministically([]byte(h), []byte("veil/v1/lock-host"))
	if err != nil {
		return "unknown"
	}
	return hex.EncodeToString(t[:8])
}

// hostIdentity is this kernel boot and PID namespace, where a pid names one process; ok is
// false where the system does not say (no /proc): locks are then never taken over by pid.
// Read once per process: every lock listed is checked against it.
var hostIdentity = sync.OnceValues(func() (string, bool) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", false
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(boot)) + " " + ns, true
})

// holderGone reports whether lock name was taken by a process of this host (this boot, this
// PID namespace) that no longer exists (a killed command). Another host's lock, or a live
// (or reused) pid, is respected.
func (c *Client) holderGone(name string) bool {
	parts := strings.Split(name, "-")
	if _, ok := hostIdentity(); !ok || len(parts) != 5 || parts[3] != c.hostTag() {
		return false
	}
	pid, err := strconv.Atoi(parts[4])
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// BreakLocks deletes every lock on the namespace, held or not, and returns their names:
// for 'veil prune --break-lock' when a lock's holder is known to be gone.
func (c *Client) BreakLocks(ctx context.Context) ([]string, error) {
	if err := c.checkOwner(ctx); err != nil {
		return nil, err
	}
	var names []string
	if err := c.be.Delete(ctx, veilDir, pruneMark); err == nil { // a crashed prune's mark (putlockless.go)
		names = append(names, pruneMark)
	}
	locks, err := c.be.List(ctx, locksDir)
	if errors.Is(err, storage.ErrNotFound) {
		return names, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list locks: %w", err)
	}
	for _, l := range locks {
		if err := c.be.Delete(ctx, locksDir, l.Name); err != nil && !errors.Is(err, storage.ErrNotFound) {
			return names, fmt.Errorf("break lock %s: %w", l.Name, err)
		}
		names = append(names, l.Name)
	}
	return names, nil
}

// ErrForeignKey reports a namespace that belongs to another master key.
var ErrForeignKey = errors.New("this storage location belongs to another veil key (a second 'veil init'?); " +
	"to use it from another machine, copy your profile directory there")

// ErrLocked reports a conflicting command running on the same namespace.
var ErrLocked = errors.New("another veil command holds a conflicting lock on this storage")

// Claim makes the storage location this key's at once, as the first command that changes
// it would: it writes the key check if there is none, and fails with ErrForeignKey if
// another key wrote it. 'veil init' claims its location, so that a second init from the
// same invitation is refused even before anything is stored (found by review: until the
// first put, a second key was accepted and then each key found the other's location).
func (c *Client) Claim(ctx context.Context) error { return c.checkOwner(ctx) }

// checkOwner verifies (or, on first use, writes) the namespace's key check, once per client.
func (c *Client) checkOwner(ctx context.Context) error {
	c.ownerOnce.Do(func() {
		_, err := c.readRecord(ctx, veilDir, keyCheck)
		switch {
		case err == nil:
		case errors.Is(err, storage.ErrNotFound):
			_, err = c.writeRecord(ctx, veilDir, keyCheck, &record{Type: typeDir})
		case errors.Is(err, ErrRecord):
			err = ErrForeignKey
		default:
			if e := notAnswering(err); e != nil {
				err = e
			}
		}
		c.ownerErr = err
		if err == nil {
			c.keyChecked.Store(true)
		}
	})
	return c.ownerErr
}

// lock takes a shared or exclusive lock on the namespace after checking its owner, and loads
// the tree root. A shared lock is taken by commands that change records: they are tracked,
// and the returned function publishes the next tree root before it releases the lock
// (reporting a failure to publish). Prune (exclusive) changes no record.
func (c *Client) lock(ctx context.Context, exclusive bool) (func() error, error) {
	begin := c.beginMarked
	if exclusive {
		begin = c.refresh
	}
	return c.takeLock(ctx, exclusive, begin, func() { c.marks = nil })
}

// lockRemoving is the lock of a command that removes or moves records (rm, mv, sync): it
// changes records, as a shared lock's command, but alone: exclusive, so no put under the
// shared lock writes a record between its read of a name and its removal of it, and with
// prune's mark (markPruning), so no lock-free put does either. Found by review: under the
// shared lock, mv or rm moved away or deleted the record a concurrent put had just
// written, and the put's acknowledged file was readable in no snapshot. The mark goes
// once the command's root is published, before the lock is released: deleted after, it
// could be the mark of a prune that took the lock meanwhile (found by review).
func (c *Client) lockRemoving(ctx context.Context) (func() error, error) {
	unmark := func() {}
	return c.takeLock(ctx, true, func(ctx context.Context) error {
		u, err := c.markPruning(ctx)
		if err != nil {
			return err
		}
		if err := c.beginMarked(ctx); err != nil {
			u()
			return err
		}
		unmark = u
		return nil
	}, func() { unmark(); c.marks = nil })
}

// beginMarked is beginChanges, with the move marks read beside it (startMarks): the
// command refuses what a pending mv covers.
func (c *Client) beginMarked(ctx context.Context) error {
	c.startMarks(ctx)
	if err := c.beginChanges(ctx); err != nil {
		c.marks()
		c.marks = nil
		return err
	}
	return nil
}

// takeLock takes the lock and runs begin under it; the returned function publishes the
// command's changes (if begin tracked any), runs end, and releases the lock.
func (c *Client) takeLock(ctx context.Context, exclusive bool, begin func(context.Context) error, end func()) (func() error, error) {
	if c.pinned() {
		return nil, errors.New("this client reads a snapshot (--at, --version, --snapshot): it changes nothing")
	}
	if err := c.checkOwner(ctx); err != nil {
		return nil, err
	}
	kind := "shared"
	if exclusive {
		kind = "exclusive"
	}
	var id [8]byte
	rand.Read(id[:])
	name := fmt.Sprintf("%s-%d-%s-%s-%d", kind, time.Now().Unix(), hex.EncodeToString(id[:]), c.hostTag(), os.Getpid())
	// Retried as uploads are: a store node that dies as the lock goes out (the request cut
	// off, its node left for another) failed the whole command (found by the multi-node
	// test's SIGKILL).
	put := func() error { return c.be.Put(ctx, locksDir, name, bytes.NewReader(nil), 0) }
	if err := retry(ctx, put); err != nil {
		return nil, fmt.Errorf("write lock: %w", err)
	}
	release := func() { c.be.Delete(context.WithoutCancel(ctx), locksDir, name) }
	others, err := c.be.List(ctx, locksDir)
	if err != nil {
		release()
		return nil, fmt.Errorf("list locks: %w", err)
	}
	now := lockClock(others, name)
	c.skew.Store(int64(time.Until(now)))
	for _, o := range others {
		if o.Name == name || !o.ModTime.IsZero() && now.Sub(o.ModTime) > lockStale {
			continue
		}
		if c.holderGone(o.Name) {
			c.log.Warn("taking over a lock whose process on this host is gone", "lock", o.Name)
			c.be.Delete(ctx, locksDir, o.Name)
			continue
		}
		if exclusive || strings.HasPrefix(o.Name, "exclusive-") {
			release()
			return nil, fmt.Errorf("%w (%s, since %s); try again when it is done", ErrLocked,
				strings.SplitN(o.Name, "-", 2)[0], o.ModTime.Format(time.DateTime))
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // keep the lock fresh while the command runs; retry soon if a refresh fails
		defer wg.Done()
		t := time.NewTimer(lockRefresh)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				next := lockRefresh
				// Not under the command's context: an interrupted command still finishes
				// its writes and publishes under the lock (found by review).
				if err := c.be.Put(context.WithoutCancel(ctx), locksDir, name, bytes.NewReader(nil), 0); err != nil {
					c.log.Warn("refreshing the storage lock failed; retrying", "err", err)
					next = lockRetry
				}
				t.Reset(next)
			case <-stop:
				return
			}
		}
	}()
	unlock := func() { close(stop); wg.Wait(); release() }
	// One changing command at a time per Client: the tree root tracks one command's changes.
	c.changing.Lock()
	if err := begin(ctx); err != nil {
		c.changing.Unlock()
		unlock()
		return nil, err
	}
	return func() error {
		defer unlock()
		defer c.changing.Unlock()
		defer end()
		// Publish even when the command was cancelled: what it wrote must be listed.
		return c.publishChanges(context.WithoutCancel(ctx))
	}, nil
}

// lockClock is "now" for judging the locks listed: the storage's own time, as it dated the
// lock this command just wrote (name), so that a lock is stale by the storage's clock alone;
// this machine's clock only if the storage gives no times. Found by review: against the
// local clock, a machine whose clock ran more than lockStale ahead took live locks for
// abandoned ones (a prune could then delete chunks a running put was about to reference).
func lockClock(listed []storage.Info, name string) time.Time {
	for _, o := range listed {
		if o.Name == name && !o.ModTime.IsZero() {
			return o.ModTime
		}
	}
	return time.Now()
}

// storageNow is the storage's clock as of the last lock taken (this machine's clock plus the
// skew seen then): prune's grace and forget's gap marks judge the storage's times by it.
func (c *Client) storageNow() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// unlockInto runs unlock and keeps its error in *err unless *err already holds one.
func unlockInto(err *error, unlock func() error) {
	if e := unlock(); e != nil && *err == nil {
		*err = e
	}
}
