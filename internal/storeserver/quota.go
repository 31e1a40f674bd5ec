package storeserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/veil-project/veil/internal/storage"
)

// Quota reservations keep a put refused by the quota from leaving its content in the blob
// store (an orphan until gc: without them a user past their quota could fill the
// service's disk). Content over InlineMax is committed to the blob store before the
// transaction that references it, so whether the quota can take it is settled first, and
// kept settled until that transaction:
//   - a large put reserves (Namespace.reserve): it reads the user's usage and refuses the
//     put unless usage + every reservation and claim in flight + what the put will charge
//     fits the quota; its bytes stay held until after its transaction. No lock is held
//     over the read: a claim or reservation released during it counts as in flight
//     (usageRead), since the read may predate its transaction's commit;
//   - every other write that may grow the user's usage (inline puts and batches, Create,
//     Move) claims an upper bound of what it will charge (Namespace.claim: no database
//     read, one claim per batch) until after its transaction, so a reservation made
//     meanwhile counts it; a move that lengthens names has no bound without reading the
//     tree it moves, and claims without one (claimUnbounded): a reservation waits until
//     no such claim of the user is in flight;
//   - every transaction that grows the usage (charge) leaves room for the bytes held by
//     reservations that neither it nor a committed transaction has charged
//     (Service.heldBy; reservation.charging), so what was settled for a large put is not
//     taken by a write checked before it.
//
// A reservation made while a write of the same user is between its check and its
// release may count that write twice (refusing a put that would fit, in a race near the
// quota only). With PostgreSQL a reservation is also recorded in the database, where the
// other nodes' checks and transactions count it (meta_pg_quota.go); their claims are not
// recorded: a node's small write is checked by its transaction alone.

// quotaBook is one user's reservations and claims in flight.
type quotaBook struct {
	claimed int64                     // claims: upper bounds, unchecked
	claims  int                       // how many
	unbound int                       // how many of them have no bound (a move)
	idle    chan struct{}             // closed when unbound drops to 0
	held    map[*reservation]struct{} // reservations: checked, content headed for the blob store
	reads   map[*usageRead]struct{}   // reservations reading the usage (tryReserve)
}

// usageRead is a reservation's read of the usage in progress: what was released
// meanwhile, which the read may or may not have seen charged, so the reservation counts
// it as still in flight.
type usageRead struct {
	released int64 // bytes of the claims and reservations released since the read began
	unbound  bool  // a claim without a bound was released since: read again
}

// reservation is a large put's reservation (held) or a write's claim.
type reservation struct {
	s       *Service
	user    string
	bytes   int64
	held    bool
	nobound bool   // a claim without a bound (claimUnbounded)
	in      metaTx // the transaction attempt that charges it (guarded by holdMu)
	done    bool   // in has committed: the user's usage counts the bytes (guarded by holdMu)
	id      int64  // its record in the database, seen by every node (metaStore.reserve); 0: none
	once    sync.Once
}

// release gives the bytes back, after the transaction (nil: nothing reserved).
func (r *reservation) release() {
	if r == nil {
		return
	}
	r.once.Do(func() {
		s := r.s
		if r.id != 0 { // its record, unless a committed transaction deleted it
			s.holdMu.Lock()
			done := r.done
			s.holdMu.Unlock()
			if !done {
				s.meta.unreserve(r.user, r.id) // not under holdMu: a database round trip
			}
		}
		s.holdMu.Lock()
		defer s.holdMu.Unlock()
		b := s.quota[r.user]
		for rd := range b.reads { // a read in progress may predate the charge: count it
			rd.released += r.bytes
			rd.unbound = rd.unbound || r.nobound
		}
		if r.held {
			delete(b.held, r)
			s.nHeld.Add(-1)
		} else {
			b.claimed -= r.bytes
			b.claims--
		}
		if r.nobound {
			if b.unbound--; b.unbound == 0 {
				close(b.idle)
				b.idle = nil
			}
		}
		b.dropIfEmpty(s, r.user)
	})
}

// charging says transaction attempt t charges the reservation's bytes: t's checks no
// longer leave room for them, nor, once t has committed, any other's (nil or a claim:
// nothing to say). Until release a reservation may make another reservation count its
// bytes twice, never a transaction.
func (r *reservation) charging(t metaTx) {
	if r == nil || !r.held {
		return
	}
	s := r.s
	s.holdMu.Lock()
	r.in = t
	s.holdMu.Unlock()
	if r.id != 0 {
		t.chargeReservation(r.user, r.id)
	}
	t.onCommit(func() {
		s.holdMu.Lock()
		r.done = true
		s.holdMu.Unlock()
	})
}

// dropIfEmpty forgets the book of user when it holds nothing (holdMu held).
func (b *quotaBook) dropIfEmpty(s *Service, user string) {
	if b.claims == 0 && len(b.held) == 0 && len(b.reads) == 0 {
		delete(s.quota, user)
	}
}

// book returns user's book, made if absent (holdMu held).
func (s *Service) book(user string) *quotaBook {
	b := s.quota[user]
	if b == nil {
		b = &quotaBook{held: map[*reservation]struct{}{}, reads: map[*usageRead]struct{}{}}
		s.quota[user] = b
	}
	return b
}

// heldBy is the bytes that user's reservations hold and no committed transaction nor
// transaction attempt t has charged: room t must leave.
func (s *Service) heldBy(user string, t metaTx) int64 {
	if s.nHeld.Load() == 0 {
		return 0
	}
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	var n int64
	if b := s.quota[user]; b != nil {
		for r := range b.held {
			if !r.done && r.in != t {
				n += r.bytes
			}

		}
	}
	return n
}

// hasQuota reports whether the user may have a quota (set when the user is created or by
// SetQuota; another node's change is seen once the cached account is read again).
func (n *Namespace) hasQuota() bool {
	u, ok := n.s.users.get(n.user)
	return !ok || u.quota != 0
}

// claim records that a write will charge at most bytes until release (after its
// transaction); nil for a user without a quota.
func (n *Namespace) claim(bytes int64) *reservation {
	if bytes <= 0 || !n.hasQuota() {
		return nil
	}
	s := n.s
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	b := s.book(n.user)
	b.claimed += bytes
	b.claims++
	return &reservation{s: s, user: n.user, bytes: bytes}
}

// claimUnbounded records that a write may grow the usage by an amount unknown before its
// transaction, until release: reservations wait for it (nil for a user without a quota).
func (n *Namespace) claimUnbounded() *reservation {
	if !n.hasQuota() {
		return nil
	}
	s := n.s
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	b := s.book(n.user)
	b.claims++
	if b.unbound++; b.idle == nil {
		b.idle = make(chan struct{})
	}
	return &reservation{s: s, user: n.user, nobound: true}
}

// reserve refuses, before any content reaches the blob store, a put of size bytes to
// dir/name that the user's quota cannot take with the reservations and claims in flight;
// with keep it holds what the put will charge until release (after the transaction:
// the reservation is nil when it charges nothing). The transaction still checks exactly;
// the answer depends on the user's own usage only.
func (n *Namespace) reserve(ctx context.Context, dir, name string, size int64, keep bool) (*reservation, error) {
	if !n.hasQuota() {
		return nil, nil
	}
	for {
		r, wait, err := n.tryReserve(ctx, dir, name, size, keep)
		if wait == nil && r != nil {
			// Recorded where every node sees it (PostgreSQL), and checked against the
			// others' records there: without it two nodes each admitted a reservation
			// the other's left no room for (TestPGTwoNodesShareReservations).
			if r.id, err = n.s.meta.reserve(ctx, n.user, r.bytes); err != nil {
				r.release()
				return nil, err
			}
		}
		if wait == nil {
			return r, err
		}
		select { // a claim without a bound (a move) is in flight: its growth is unknown
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("quota check waiting for user %q's moves: %w", n.user, ctx.Err())
		}
	}
}

// tryReserve is reserve, or a channel to wait on before trying again while a claim
// without a bound is in flight. No lock is held over its read of the usage: a claim or
// reservation released during the read (its transaction committed before or after the
// read saw the usage) is counted as still in flight (usageRead), and one without a bound
// makes it read again. Before, a lock every release took was held over the read, so each
// reservation's database round trip held up every user's writes.
func (n *Namespace) tryReserve(ctx context.Context, dir, name string, size int64, keep bool) (*reservation, <-chan struct{}, error) {
	s := n.s
	s.holdMu.Lock()
	b := s.book(n.user)
	if b.unbound > 0 {
		idle := b.idle
		s.holdMu.Unlock()
		return nil, idle, nil
	}
	rd := &usageRead{}
	b.reads[rd] = struct{}{}
	s.holdMu.Unlock()
	var need, used, quota int64
	err := s.meta.view(ctx, func(t metaTx) error {
		u, m, ok, err := t.account(n.user)
		if err != nil || !ok || u.quota == 0 {
			return err // a missing user: the transaction answers
		}
		used, quota = u.used+m, u.quota
		need, err = n.linkCost(t, dir, name, size)
		return err
	})
	s.holdMu.Lock()
	defer s.holdMu.Unlock()
	delete(b.reads, rd) // b stays in s.quota while it has a read
	defer b.dropIfEmpty(s, n.user)
	switch {
	case err != nil || need <= 0:
		return nil, nil, err
	case b.unbound > 0:
		return nil, b.idle, nil
	case rd.unbound:
		return nil, closed, nil
	}
	inflight := b.claimed + rd.released // committed ones too: the read may predate their commit
	for r := range b.held {
		inflight += r.bytes
	}
	if used+inflight+need > quota {
		return nil, nil, fmt.Errorf("user %q would store %d more bytes, %d of %d in use or being stored: %w",
			n.user, need, used+inflight, quota, storage.ErrQuota)
	}
	if !keep {
		return nil, nil, nil
	}
	r := &reservation{s: s, user: n.user, bytes: need, held: true}
	b.held[r] = struct{}{}
	s.nHeld.Add(1)
	return r, nil, nil
}

// closed is a closed channel: try again at once.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// linkCost is what linking size bytes at dir/name will charge (link): the content, less
// the content it replaces, plus the names of the entry and of the directories it makes.
// A link refused whatever the quota (dir/name is a directory, a file stands in dir's
// path, or the directory it adds an entry to is full) fails here as link would: its content would otherwise be left in the blob store,
// as many times as it is put.
func (n *Namespace) linkCost(t metaTx, dir, name string, size int64) (int64, error) {
	need := size
	old, ok, err := t.entry(n.user, dir, name)
	switch {
	case err != nil:
		return 0, err
	case ok && !old.isDir():
		return need - old.size, nil // its directories exist
	case ok:
		return 0, storage.ErrIsDir
	}
	need += metaCost(dir, name)
	parent := ""
	for i, c := range splitDir(dir) {
		if e, ok, err := t.entry(n.user, parent, c); err != nil {
			return 0, err
		} else if !ok {
			_, err := n.roomIn(t, parent)
			return need + dirCost(dir, i), err
		} else if !e.isDir() {
			return 0, fmt.Errorf("%q is a file: %w", storage.Join(parent, c), storage.ErrNotDir)
		}
		parent = storage.Join(parent, c)
	}
	_, err = n.roomIn(t, dir)
	return need, err
}

// roomIn returns how many entries dir holds, and fails unless one more fits
// (MaxDirEntries).
func (n *Namespace) roomIn(t metaTx, dir string) (int64, error) {
	have, err := t.dirCount(n.user, dir)
	if err != nil {
		return 0, err
	}
	if lim := int64(n.s.cfg.Limits.MaxDirEntries); have >= lim {
		return 0, limitErr("directory %.64q has %d entries, limit %d", dir, have, lim)
	}
	return have, nil
}

// claimCost bounds what linking size bytes at dir/name may charge.
func claimCost(dir, name string, size int64) int64 {
	return size + metaCost(dir, name) + dirCost(dir, 0)
}

// dirCost is what making dir's components from the from-th on costs against the quota.
func dirCost(dir string, from int) int64 {
	var n int64
	parent := ""
	for i, c := range splitDir(dir) {
		if i >= from {
			n += metaCost(parent, c)
		}
		parent = storage.Join(parent, c)
	}
	return n
}

func splitDir(dir string) []string {
	if dir == "" {
		return nil
	}
	return strings.Split(dir, "/")
}
