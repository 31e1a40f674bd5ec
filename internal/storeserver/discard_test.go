package storeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/veil-project/veil/internal/storage"
	"github.com/veil-project/veil/internal/testutil"
)

// forEachStore runs fn per metadata database and blob store (the data directory, and
// an S3 bucket of a real S3 server, versitygw); open makes a new service.
func forEachStore(t *testing.T, fn func(t *testing.T, open func(*testing.T) *Service)) {
	srv := testutil.StartS3(t)
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		t.Run("disk", func(t *testing.T) {
			fn(t, func(t *testing.T) *Service { return newService(t, Config{}) })
		})
		t.Run("s3", func(t *testing.T) {
			fn(t, func(t *testing.T) *Service { return newService(t, Config{Blobs: srv.NewBucket(t, "blobs", "")}) })
		})
	})
}

// A batch its transaction refuses whatever the quota (a condition that does not hold,
// another object's name a directory or under a file) leaves nothing of its large object
// in the blob store: before, each such batch left that content behind (for a user with a
// quota, any number of orphans, each up to the free quota, until gc). The reservation
// does not read the batch's other names (that cost PostgreSQL a round trip per object
// under a lock every user's release waits for); the refused upload removes its content.
func TestQuotaRefusedBatchLeavesNoOrphan(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*testing.T) *Service) {
		s := open(t)
		for _, user := range []string{"alice", "bob"} { // with a quota, without
			var opts []UserOption
			if user == "alice" {
				opts = append(opts, WithQuota(256<<10))
			}
			ns, _ := addUser(t, s, user, opts...)
			if err := ns.Create(t.Context(), "d/sub"); err != nil {
				t.Fatal(err)
			}
			if err := ns.Put(t.Context(), "", "f", bytes.NewReader([]byte("x")), 1); err != nil {
				t.Fatal(err)
			}
			used, _, _ := accountOf(t, s, user)
			wrong := [32]byte{1}
			for i, c := range []struct {
				obj  storage.Object
				want error
			}{
				{storage.Object{Name: "f", Absent: true}, storage.ErrExists},
				{storage.Object{Name: "f", Data: []byte("y"), Create: true}, storage.ErrExists},
				{storage.Object{Name: "f", Data: []byte("y"), Match: &wrong}, storage.ErrChanged},
				{storage.Object{Name: "new", Data: []byte("y"), Match: &wrong}, storage.ErrChanged},
				{storage.Object{Dir: "d", Name: "sub", Data: []byte("y")}, storage.ErrIsDir},
				{storage.Object{Dir: "f", Name: "y", Data: []byte("y")}, storage.ErrNotDir},
			} {
				data := randBytes(uint64(200+i), 200<<10) // 6 x 200 KiB: more than the quota
				err := ns.PutBatch(t.Context(), []storage.Object{{Dir: "b", Name: "big", Data: data}, c.obj})
				if !errors.Is(err, c.want) {
					t.Fatalf("%s: batch with %+v: %v, want %v", user, c.obj, err, c.want)
				}
			}
			checkNoLeftovers(t, s, user, used)
		}
		checkBooksEmpty(t, s)
	})
}

// pauseBlobs holds the first blob store commit (once done) or remove (before it
// starts) until resume is closed; the others pass.
type pauseBlobs struct {
	blobStore
	onRemove bool // pause a remove, not a commit
	first    atomic.Bool
	paused   chan struct{}
	resume   chan struct{}
}

func newPauseBlobs(s *Service, onRemove bool) *pauseBlobs {
	p := &pauseBlobs{blobStore: s.blobs, onRemove: onRemove, paused: make(chan struct{}), resume: make(chan struct{})}
	s.blobs = p
	return p
}

// wait returns once the blob store call is paused.
func (p *pauseBlobs) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the blob store call to pause never came")
	}
}

func (p *pauseBlobs) pause() {
	if p.first.CompareAndSwap(false, true) {
		close(p.paused)
		<-p.resume
	}
}

func (p *pauseBlobs) commit(ctx context.Context, h blobID, tmp string, size int64) error {
	err := p.blobStore.commit(ctx, h, tmp, size)
	if !p.onRemove {
		p.pause()
	}
	return err
}

func (p *pauseBlobs) remove(ctx context.Context, h blobID) error {
	if p.onRemove {
		p.pause()
	}
	return p.blobStore.remove(ctx, h)
}

// A large put refused by its transaction after its reservation (its name became a
// directory meanwhile) removes its content: before, it was left for gc.
func TestRefusedPutLeavesNoOrphan(t *testing.T) {
	forEachStore(t, func(t *testing.T, open func(*testing.T) *Service) {
		s := open(t)
		ns, _ := addUser(t, s, "alice", WithQuota(1<<20))
		p := newPauseBlobs(s, false)
		done := make(chan error, 1)
		go func() { done <- ns.Put(t.Context(), "", "x", bytes.NewReader(randBytes(1, 300<<10)), 300<<10) }()
		p.wait(t) // its content is in the blob store, its transaction not yet run
		if err := ns.Create(t.Context(), "x"); err != nil {
			t.Fatal(err)
		}
		used, _, _ := accountOf(t, s, "alice")
		close(p.resume)
		if err := <-done; !errors.Is(err, storage.ErrIsDir) {
			t.Fatalf("put onto a directory made meanwhile: %v, want %v", err, storage.ErrIsDir)
		}
		checkNoLeftovers(t, s, "alice", used)
		checkBooksEmpty(t, s)
	})
}

// A refused upload removes its content only when nothing else has a claim on it: not
// when a file references it, nor when another upload of the same content holds it
// (stored, its transaction still to come), and an upload of the same content arriving
// while it is being removed waits and stores it again. Each case loses the file's
// content with a removal that ignores it.
func TestRefusedUploadKeepsSharedContent(t *testing.T) {
	refuse := func(ns *Namespace, data []byte) error {
		err := ns.PutBatch(context.Background(), []storage.Object{{Name: "big", Data: data}, {Name: "f", Absent: true}})
		if !errors.Is(err, storage.ErrExists) {
			return fmt.Errorf("refused batch: %v, want %v", err, storage.ErrExists)
		}
		return nil
	}
	refused := func(t *testing.T, ns *Namespace, data []byte) {
		t.Helper()
		if err := refuse(ns, data); err != nil {
			t.Fatal(err)
		}
	}
	same := func(t *testing.T, ns *Namespace, name string, want []byte) {
		t.Helper()
		if got, err := getBytes(t, ns, "", name); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after a refused upload of its content: %d bytes, %v", name, len(got), err)
		}
	}
	forEachStore(t, func(t *testing.T, open func(*testing.T) *Service) {
		setup := func(t *testing.T) (s *Service, alice, bob *Namespace) {
			s = open(t)
			alice, _ = addUser(t, s, "alice", WithQuota(4<<20))
			bob, _ = addUser(t, s, "bob", WithQuota(4<<20))
			putBytes(t, bob, "", "f", []byte("x"))
			return s, alice, bob
		}
		t.Run("referenced", func(t *testing.T) {
			s, alice, bob := setup(t)
			data := randBytes(11, 300<<10)
			putBytes(t, alice, "", "a", data)
			refused(t, bob, data)
			same(t, alice, "a", data)
			fsckClean(t, s)
		})
		t.Run("held", func(t *testing.T) {
			s, alice, bob := setup(t)
			p := newPauseBlobs(s, false)
			data := randBytes(12, 300<<10)
			done := make(chan error, 1)
			go func() { done <- alice.Put(t.Context(), "", "h", bytes.NewReader(data), int64(len(data))) }()
			p.wait(t) // alice's content is stored, her transaction still to come
			refused(t, bob, data)
			close(p.resume)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			same(t, alice, "h", data)
			fsckClean(t, s)
		})
		t.Run("removing", func(t *testing.T) {
			s, alice, bob := setup(t)
			p := newPauseBlobs(s, true)
			data := randBytes(13, 300<<10)
			bobDone := make(chan error, 1)
			go func() { bobDone <- refuse(bob, data) }()
			p.wait(t) // bob's refused content is being removed
			done := make(chan error, 1)
			go func() { done <- alice.Put(t.Context(), "", "r", bytes.NewReader(data), int64(len(data))) }()
			select {
			case err := <-done:
				t.Fatalf("a put of content being removed did not wait for the removal: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			close(p.resume)
			if err := <-bobDone; err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			same(t, alice, "r", data)
			fsckClean(t, s)
		})
	})
}

// gateMeta holds the first read-only transaction after arm, once its reads are done,
// until open is closed: a quota reservation that has read the usage and not yet counted
// what is in flight.
type gateMeta struct {
	metaStore
	armed  atomic.Bool
	inside chan struct{}
	open   chan struct{}
}

func (g *gateMeta) view(ctx context.Context, fn func(metaTx) error) error {
	err := g.metaStore.view(ctx, fn)
	if g.armed.CompareAndSwap(true, false) {
		close(g.inside)
		<-g.open
	}
	return err
}

// countBlobs counts blob store commits.
type countBlobs struct {
	blobStore
	n atomic.Int64
}

func (c *countBlobs) commit(ctx context.Context, h blobID, tmp string, size int64) error {
	c.n.Add(1)
	return c.blobStore.commit(ctx, h, tmp, size)
}

// A large object's quota reservation holds no lock over its read of the usage: a write
// of the same user that commits and releases its claim meanwhile neither waits for the
// read (before, every release of every user waited for any reservation's database read)
// nor is missed by it: the reservation counts a claim released during its read as still
// in flight (the read may predate its commit), and reads again after a move's claim
// without a bound; the large object is refused before its content reaches the blob store.
func TestQuotaReservationReadHoldsNoRelease(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		t.Run("put", func(t *testing.T) {
			s := newService(t, Config{})
			ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
			duringReservationRead(t, s, ns, 200<<10, func() error {
				return ns.Put(context.Background(), "", "small", bytes.NewReader(randBytes(22, 60<<10)), 60<<10)
			})
		})
		t.Run("move", func(t *testing.T) {
			s := newService(t, Config{})
			ns, _ := addUser(t, s, "alice", WithQuota(256<<10))
			var objs []storage.Object
			for i := range 200 {
				objs = append(objs, storage.Object{Dir: "d", Name: fmt.Sprint(i), Data: []byte{1}})
			}
			if err := ns.PutBatch(t.Context(), objs); err != nil {
				t.Fatal(err)
			}
			used, meta, quota := accountOf(t, s, "alice")
			duringReservationRead(t, s, ns, quota-used-meta-10_000, func() error { // fits, not with the move
				return ns.Move(context.Background(), "", "d", "", "d"+strings.Repeat("x", 100)) // +20,000 bytes
			})
		})
	})
}

// duringReservationRead runs write while a batch's large object of size bytes is in its
// quota reservation, between the read of the usage and the count of what is in flight:
// write must not wait for it, and the object, which fits without write, not with it,
// must be refused without reaching the blob store.
func duringReservationRead(t *testing.T, s *Service, ns *Namespace, size int64, write func() error) {
	t.Helper()
	g := &gateMeta{metaStore: s.meta, inside: make(chan struct{}), open: make(chan struct{})}
	s.meta = g
	c := &countBlobs{blobStore: s.blobs}
	s.blobs = c
	var once sync.Once
	release := func() { once.Do(func() { close(g.open) }) }
	defer release()
	g.armed.Store(true)
	large := make(chan error, 1)
	go func() {
		large <- ns.PutBatch(context.Background(), []storage.Object{{Name: "big", Data: randBytes(21, int(size))}})
	}()
	select {
	case <-g.inside: // the reservation has read the usage
	case <-time.After(30 * time.Second):
		t.Fatal("the reservation never read the usage")
	}
	done := make(chan error, 1)
	go func() { done <- write() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for a large object's quota reservation to read the database")
	}
	used, _, _ := accountOf(t, s, ns.user)
	release()
	if err := <-large; !errors.Is(err, storage.ErrQuota) {
		t.Fatalf("%d bytes that fit only without the write: %v, want %v", size, err, storage.ErrQuota)
	}
	if n := c.n.Load(); n != 0 {
		t.Fatalf("the refused object reached the blob store (%d commits): its reservation missed the write committed during its read", n)
	}
	checkNoLeftovers(t, s, ns.user, used)
	checkBooksEmpty(t, s)
}

// barrierBlobs returns from a blob store commit once k commits have been made (or after
// a second), so that k uploads reach their transactions together.
type barrierBlobs struct {
	blobStore
	k    int
	mu   sync.Mutex
	n    int
	full chan struct{}
}

func (b *barrierBlobs) commit(ctx context.Context, h blobID, tmp string, size int64) error {
	err := b.blobStore.commit(ctx, h, tmp, size)
	b.mu.Lock()
	if b.n++; b.n == b.k {
		close(b.full)
	}
	full := b.full
	b.mu.Unlock()
	select {
	case <-full:
	case <-time.After(time.Second):
	}
	return err
}

// Refused uploads of the same content ending together leave nothing behind: the last to
// end removes it. Found by review of the first version, which read the count of holds
// and dropped its own in two steps: two uploads could each see the other's hold.
func TestRefusedUploadsOfSameContent(t *testing.T) {
	forEachMeta(t, func(t *testing.T, newService func(testing.TB, Config) *Service) {
		s := newService(t, Config{})
		var users []*Namespace
		for _, name := range []string{"alice", "bob", "carol"} {
			ns, _ := addUser(t, s, name, WithQuota(4<<20))
			putBytes(t, ns, "", "f", []byte("x"))
			users = append(users, ns)
		}
		inner := s.blobs
		for round := range 10 {
			s.blobs = &barrierBlobs{blobStore: inner, k: len(users), full: make(chan struct{})}
			data := randBytes(uint64(100+round), 100<<10)
			errs := make(chan error, len(users))
			for _, ns := range users {
				go func() {
					errs <- ns.PutBatch(context.Background(), []storage.Object{{Name: "big", Data: data}, {Name: "f", Absent: true}})
				}()
			}
			for range users {
				if err := <-errs; !errors.Is(err, storage.ErrExists) {
					t.Fatalf("round %d: %v, want %v", round, err, storage.ErrExists)
				}
			}
		}
		s.blobs = inner
		checkNoLeftovers(t, s, "alice", 1)
	})
}
